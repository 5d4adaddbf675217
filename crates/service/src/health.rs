//! The service's health, shared by the applier and the listeners:
//! - **healthy**;
//! - **degraded**: writes are refused for a reason that may pass (the durable
//!   log could not be written, e.g. a full disk). `/healthz` answers 503 with
//!   the reason until an append succeeds again;
//! - **failed**: the engine could not be brought back to the durable state
//!   (a rebuild after an engine error or a refused append failed). Nothing
//!   more is answered, `/healthz` answers 503, and `run` stops the process
//!   with an error (a non-zero exit status), so a supervisor restarts it;
//! - **stalled**: the applier has been busy without completing a step (a
//!   write applied, a group logged, a read answered) for longer than the
//!   stall deadline: an engine call that never returns. `/healthz` answers 503
//!   while it lasts, so a supervisor restarts the process; the applier beats
//!   at every step and is idle (never stalled) while nothing is queued;
//! - **stale**: a polling tap (`follow_slurm`) has had no good poll for too
//!   long; `/healthz` answers 503 with its reason until a poll succeeds.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Health {
    degraded: Mutex<Option<String>>,
    failed: Mutex<Option<String>>,
    stop: Notify,
    /// When the applier last completed a step, while it is busy.
    busy_since: Mutex<Option<Instant>>,
    stale: Mutex<Option<String>>,
}

/// The applier is busy while this lives (`Health::busy`).
#[derive(Debug)]
pub struct Busy<'a>(&'a Health);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *lock(&self.0.busy_since) = None;
    }
}

fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(slot: &Mutex<Option<String>>) -> Option<String> {
    lock(slot).clone()
}

impl Health {
    /// Mark writes refused for `reason`, or clear it with `None`.
    pub fn set_degraded(&self, reason: Option<String>) {
        *self.degraded.lock().unwrap_or_else(|e| e.into_inner()) = reason;
    }

    /// The service cannot go on: remember why and wake [`Health::failed`].
    pub fn fail(&self, reason: String) {
        tracing::error!("{reason}");
        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
        self.stop.notify_waiters();
        self.stop.notify_one();
    }

    /// Why the service failed, if it did.
    pub fn failure(&self) -> Option<String> {
        read(&self.failed)
    }

    /// Mark a polling tap behind for `reason`, or clear it with `None`.
    pub fn set_stale(&self, reason: Option<String>) {
        *lock(&self.stale) = reason;
    }

    /// Why the service is not healthy (failed, else degraded, else a tap
    /// stale), if it is not.
    pub fn problem(&self) -> Option<String> {
        self.failure()
            .or_else(|| read(&self.degraded))
            .or_else(|| read(&self.stale))
    }

    /// The applier starts on work: busy (and beating) until the guard drops.
    pub fn busy(&self) -> Busy<'_> {
        *lock(&self.busy_since) = Some(Instant::now());
        Busy(self)
    }

    /// The applier completed a step of its work.
    pub fn beat(&self) {
        let mut since = lock(&self.busy_since);
        if since.is_some() {
            *since = Some(Instant::now());
        }
    }

    /// How long the applier has been busy without completing a step, if
    /// that is longer than `deadline`.
    pub fn stalled(&self, deadline: Duration) -> Option<Duration> {
        let since = (*lock(&self.busy_since))?;
        let silent = since.elapsed();
        (silent > deadline).then_some(silent)
    }

    /// Wait until the service fails (returns at once if it already has).
    pub async fn failed(&self) {
        let notified = self.stop.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.failure().is_none() {
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_outranks_degraded_and_degraded_clears() {
        let health = Health::default();
        assert_eq!(health.problem(), None);
        health.set_degraded(Some("disk full".into()));
        assert_eq!(health.problem().as_deref(), Some("disk full"));
        health.set_degraded(None);
        assert_eq!(health.problem(), None);
        health.set_degraded(Some("disk full".into()));
        health.fail("rebuild failed".into());
        assert_eq!(health.problem().as_deref(), Some("rebuild failed"));
        assert_eq!(health.failure().as_deref(), Some("rebuild failed"));
    }

    #[test]
    fn stalled_only_while_busy_without_a_beat_past_the_deadline() {
        let health = Health::default();
        let deadline = Duration::from_millis(30);
        assert_eq!(
            health.stalled(Duration::ZERO),
            None,
            "idle is never stalled"
        );
        {
            let _busy = health.busy();
            assert_eq!(health.stalled(deadline), None);
            std::thread::sleep(Duration::from_millis(60));
            assert!(health.stalled(deadline).is_some());
            health.beat();
            assert_eq!(health.stalled(deadline), None, "a beat restarts the clock");
        }
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(health.stalled(deadline), None, "idle again");
    }
}
