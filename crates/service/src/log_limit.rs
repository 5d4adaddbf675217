//! Logging rejected input without flooding the log: at most `burst` records
//! per `window`; the rest are counted, and the count is logged with the next
//! record that is let through (or when the window turns over).

use std::time::{Duration, Instant};

/// A limiter of log records over a sliding window.
#[derive(Debug)]
pub struct LogLimit {
    burst: u32,
    window: Duration,
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

impl LogLimit {
    /// At most `burst` records per `window`.
    pub fn new(burst: u32, window: Duration) -> Self {
        LogLimit {
            burst,
            window,
            window_start: None,
            in_window: 0,
            suppressed: 0,
        }
    }

    /// May a record be logged at `now`? `Some(n)` lets it through, `n` being
    /// how many were suppressed since the last one let through; `None`
    /// suppresses it.
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        let fresh = self
            .window_start
            .is_none_or(|start| now.duration_since(start) >= self.window);
        if fresh {
            self.window_start = Some(now);
            self.in_window = 0;
        }
        if self.in_window < self.burst {
            self.in_window += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_records_are_counted_until_the_window_turns() {
        let mut limit = LogLimit::new(2, Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(limit.admit(t0), Some(0));
        assert_eq!(limit.admit(t0), Some(0));
        assert_eq!(limit.admit(t0 + Duration::from_secs(1)), None);
        assert_eq!(limit.admit(t0 + Duration::from_secs(9)), None);
        // A new window: the first record carries the two suppressed.
        assert_eq!(limit.admit(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(limit.admit(t0 + Duration::from_secs(11)), Some(0));
        assert_eq!(limit.admit(t0 + Duration::from_secs(12)), None);
    }
}
