//! The wall clock: [`wall_secs`] as the system says it (the Slurm follower's
//! stamps, `/metrics`' silence gauges), and as the service trusts it. Two
//! things read the trusted clock:
//! - the calc-period ticker (`ticks`), which settles each boundary the wall
//!   clock passes. A tick is logged, and every later event must be timed at
//!   or after it, so a tick the clock places in the future (a brief forward
//!   jump) would refuse every correctly timed write until real time caught
//!   up, across restarts. [`SteadyWall`] follows the wall clock while it
//!   agrees with the monotonic clock and ignores a jump until the new time
//!   has held for [`JUMP_ACCEPT_AFTER_SECS`] (an administrator's correction,
//!   not a glitch);
//! - the write path ([`EventLead`]): an event timed more than the lead
//!   ahead of the wall clock (a record's bogus `EndTime` in 2099, a writer
//!   whose clock is wrong) is rejected, naming the field, since once applied
//!   it would hold the service's time there and refuse every later write.

use std::sync::Arc;

use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::Time;

/// Unix seconds now, as the system clock says (no jump is smoothed: the
/// Slurm follower's stamps and `/metrics`' silence gauges read it).
pub fn wall_secs() -> Time {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Time)
}

/// A wall-clock reading in Unix seconds. The service reads the system's;
/// tests give a shifted one.
#[derive(Clone)]
pub struct WallClock(Arc<dyn Fn() -> f64 + Send + Sync>);

impl WallClock {
    /// The system's clock.
    pub fn system() -> Self {
        WallClock(Arc::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |since| since.as_secs_f64())
        }))
    }

    /// A clock read by `read`.
    pub fn from_fn(read: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        WallClock(Arc::new(read))
    }

    /// Now, in Unix seconds.
    pub fn now_secs(&self) -> f64 {
        (self.0)()
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::system()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WallClock({:.0})", self.now_secs())
    }
}

/// How far a reading may stray from the monotonic count since the last
/// trusted reading before it is a jump (the ticker reads once a second; a
/// clock slewed by NTP moves far less).
pub const JUMP_TOLERANCE_SECS: f64 = 1.0;

/// How long a jumped clock must hold its new time before it is believed.
pub const JUMP_ACCEPT_AFTER_SECS: f64 = 600.0;

/// What one reading of a [`SteadyWall`] saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// The wall clock agrees with the monotonic clock: its time.
    Steady(f64),
    /// The wall clock jumped by `skew_secs` (just now, or it still is): the
    /// monotonic clock's count from the last trusted time is used instead.
    Jumped {
        /// The time trusted instead of the wall clock's.
        trusted_secs: f64,
        /// Wall clock minus trusted time.
        skew_secs: f64,
        /// First reading of this jump.
        new: bool,
    },
    /// A jump held for the acceptance time: the wall clock is believed again.
    Accepted {
        /// The wall clock's time, now trusted.
        secs: f64,
        /// How far it moved from the monotonic count.
        skew_secs: f64,
    },
}

impl Reading {
    /// The time to trust.
    pub fn trusted_secs(&self) -> f64 {
        match *self {
            Reading::Steady(secs) | Reading::Accepted { secs, .. } => secs,
            Reading::Jumped { trusted_secs, .. } => trusted_secs,
        }
    }
}

/// A wall clock checked against a monotonic one (see the module doc).
#[derive(Debug, Clone)]
pub struct SteadyWall {
    /// The last trusted wall time and the monotonic time it was read at.
    anchor_wall_secs: f64,
    anchor_mono_secs: f64,
    /// The monotonic time of the first reading of the current jump.
    jumped_since_mono_secs: Option<f64>,
    accept_after_secs: f64,
}

impl SteadyWall {
    /// Trust `wall_secs`, read at monotonic time `mono_secs`; a jump is
    /// believed once it has held `accept_after_secs`.
    pub fn new(wall_secs: f64, mono_secs: f64, accept_after_secs: f64) -> Self {
        SteadyWall {
            anchor_wall_secs: wall_secs,
            anchor_mono_secs: mono_secs,
            jumped_since_mono_secs: None,
            accept_after_secs,
        }
    }

    /// The time to trust for a reading of the wall clock `wall_secs` taken at
    /// monotonic time `mono_secs` (never earlier than the last one).
    pub fn read(&mut self, wall_secs: f64, mono_secs: f64) -> Reading {
        let expected = self.anchor_wall_secs + (mono_secs - self.anchor_mono_secs);
        let skew_secs = wall_secs - expected;
        if skew_secs.abs() <= JUMP_TOLERANCE_SECS {
            self.anchor_wall_secs = wall_secs;
            self.anchor_mono_secs = mono_secs;
            self.jumped_since_mono_secs = None;
            return Reading::Steady(wall_secs);
        }
        let since = *self.jumped_since_mono_secs.get_or_insert(mono_secs);
        if mono_secs - since >= self.accept_after_secs {
            self.anchor_wall_secs = wall_secs;
            self.anchor_mono_secs = mono_secs;
            self.jumped_since_mono_secs = None;
            return Reading::Accepted {
                secs: wall_secs,
                skew_secs,
            };
        }
        Reading::Jumped {
            trusted_secs: expected,
            skew_secs,
            new: since == mono_secs,
        }
    }
}

/// The bound on how far ahead of the wall clock a written event may be
/// timed (`serve --max-event-lead-secs`).
#[derive(Debug, Clone)]
pub struct EventLead {
    /// The clock events are compared with.
    pub clock: WallClock,
    /// The most seconds an event may be ahead of it.
    pub max_secs: Time,
}

impl EventLead {
    /// Turn every event of `lines` timed more than the lead ahead of the
    /// clock into a rejection of its `t`.
    pub fn refuse_early(&self, lines: &mut [LogLine]) {
        let now = self.clock.now_secs().floor() as Time;
        let latest = now.saturating_add(self.max_secs);
        for line in lines {
            let Ok(event) = &line.event else { continue };
            if event.t > latest {
                let reason = format!(
                    "is {} s ahead of the service's clock ({now}); at most {} s is accepted \
                     (--max-event-lead-secs), since an event applied there would refuse every \
                     later write timed before it",
                    event.t - now,
                    self.max_secs
                );
                line.event = Err(Rejection::new(line.line, Some("t"), reason));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_jump_is_ignored_and_a_lasting_one_believed() {
        let mut wall = SteadyWall::new(1000.0, 0.0, 600.0);
        // The clock follows the monotonic one, a little drift included.
        assert_eq!(wall.read(1001.0, 1.0), Reading::Steady(1001.0));
        assert_eq!(wall.read(1002.5, 2.0), Reading::Steady(1002.5));
        // An hour forward: the monotonic count is trusted (1002.5 + 1).
        assert_eq!(
            wall.read(4603.5, 3.0),
            Reading::Jumped {
                trusted_secs: 1003.5,
                skew_secs: 3600.0,
                new: true
            }
        );
        assert_eq!(
            wall.read(4604.5, 4.0),
            Reading::Jumped {
                trusted_secs: 1004.5,
                skew_secs: 3600.0,
                new: false
            }
        );
        // Back again: steady from where it was.
        assert_eq!(wall.read(1005.5, 5.0), Reading::Steady(1005.5));
        // A jump back by ten minutes, held for ten minutes: believed then.
        assert_eq!(wall.read(406.5, 6.0).trusted_secs(), 1006.5);
        assert_eq!(wall.read(1005.5, 605.0).trusted_secs(), 1605.5);
        assert_eq!(
            wall.read(1006.5, 606.0),
            Reading::Accepted {
                secs: 1006.5,
                skew_secs: -600.0
            }
        );
        assert_eq!(wall.read(1007.5, 607.0), Reading::Steady(1007.5));
    }

    #[test]
    fn events_too_far_ahead_of_the_clock_are_rejected_by_their_time() {
        let lead = EventLead {
            clock: WallClock::from_fn(|| 1_000_000.7),
            max_secs: 300,
        };
        let line = |n: u64, t: Time| LogLine {
            line: n,
            event: Ok(fairflow_model::Event {
                t,
                op: fairflow_model::event::Op::Tick,
            }),
        };
        let mut lines = vec![line(1, 999_000), line(2, 1_000_300), line(3, 1_000_301)];
        lead.refuse_early(&mut lines);
        assert!(lines[0].event.is_ok() && lines[1].event.is_ok());
        let rejection = lines[2].event.as_ref().unwrap_err();
        assert_eq!((rejection.line, rejection.field.as_deref()), (3, Some("t")));
        assert!(
            rejection
                .reason
                .starts_with("is 301 s ahead of the service's clock (1000000); at most 300 s"),
            "{}",
            rejection.reason
        );
    }
}
