//! The write budget: how many bytes of writes may be held at once, read,
//! parsed or waiting for the applier, by every way in together (HTTP bodies,
//! socket tap batches, a followed `jobcomp` file, a replayed file). A writer
//! takes its bytes before it holds them and gives them back when its write
//! is answered; when the budget is spent, writers wait in arrival order
//! (tokio's semaphore is fair), so a flooding tap neither grows memory nor
//! starves HTTP writers: they take turns.
//!
//! The same kind of budget bounds the bytes of answers held for slow readers
//! (`stream`): there a reader that finds it spent is refused at once
//! ([`WriteBudget::try_take`]) rather than queued.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default budget, bytes.
pub const DEFAULT_WRITE_BUDGET_BYTES: usize = 16 << 20;

/// See the module documentation. Clones share one budget.
#[derive(Debug, Clone)]
pub struct WriteBudget {
    semaphore: Arc<Semaphore>,
    cap_bytes: usize,
}

/// Bytes taken from a [`WriteBudget`]; dropping it gives them back.
#[derive(Debug)]
pub struct HeldBytes(#[allow(dead_code)] OwnedSemaphorePermit);

impl WriteBudget {
    /// A budget of `cap_bytes` (at least 1, at most `u32::MAX`: the
    /// semaphore's permits).
    pub fn new(cap_bytes: usize) -> Self {
        let cap_bytes = cap_bytes.clamp(1, u32::MAX as usize);
        WriteBudget {
            semaphore: Arc::new(Semaphore::new(cap_bytes)),
            cap_bytes,
        }
    }

    /// The budget's size, bytes.
    pub fn cap_bytes(&self) -> usize {
        self.cap_bytes
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> usize {
        self.cap_bytes - self.semaphore.available_permits()
    }

    /// Take `bytes` (at least 1, at most the whole budget) if they are free
    /// now; `None` when they are not.
    pub fn try_take(&self, bytes: usize) -> Option<HeldBytes> {
        let wanted = bytes.clamp(1, self.cap_bytes) as u32;
        let permit = self.semaphore.clone().try_acquire_many_owned(wanted).ok()?;
        Some(HeldBytes(permit))
    }

    /// Take `bytes` (at least 1; a write larger than the whole budget takes
    /// the whole budget), waiting for them in arrival order.
    pub async fn take(&self, bytes: usize) -> HeldBytes {
        let wanted = bytes.clamp(1, self.cap_bytes) as u32;
        let permit = self
            .semaphore
            .clone()
            .acquire_many_owned(wanted)
            .await
            .expect("the budget's semaphore is never closed");
        HeldBytes(permit)
    }
}

impl Default for WriteBudget {
    fn default() -> Self {
        WriteBudget::new(DEFAULT_WRITE_BUDGET_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn bytes_are_held_until_dropped_and_oversized_takes_the_whole_budget() {
        let budget = WriteBudget::new(100);
        let a = budget.take(30).await;
        assert_eq!(budget.held_bytes(), 30);
        let waiting = tokio::time::timeout(Duration::from_millis(50), budget.take(1_000)).await;
        assert!(waiting.is_err(), "100 bytes are not free while 30 are held");
        drop(a);
        let whole = budget.take(1_000).await;
        assert_eq!(budget.held_bytes(), 100);
        drop(whole);
        assert_eq!(budget.held_bytes(), 0);
        let _empty = budget.take(0).await;
        assert_eq!(budget.held_bytes(), 1);
        let most = budget.try_take(99).expect("99 bytes are free");
        assert!(budget.try_take(1).is_none(), "the budget is spent");
        drop(most);
        assert!(budget.try_take(99).is_some());
    }
}
