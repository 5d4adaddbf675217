//! The service's health, shared by the applier and the listeners:
//! - **healthy**;
//! - **degraded**: writes are refused for a reason that may pass (the durable
//!   log could not be written, e.g. a full disk). `/healthz` answers 503 with
//!   the reason until an append succeeds again;
//! - **failed**: the engine could not be brought back to the durable state
//!   (a rebuild after an engine error or a refused append failed). Nothing
//!   more is answered, `/healthz` answers 503, and `run` stops the process
//!   with an error (a non-zero exit status), so a supervisor restarts it.

use std::sync::Mutex;

use tokio::sync::Notify;

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Health {
    degraded: Mutex<Option<String>>,
    failed: Mutex<Option<String>>,
    stop: Notify,
}

fn read(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
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

    /// Why the service is not healthy (failed, or else degraded), if it is not.
    pub fn problem(&self) -> Option<String> {
        self.failure().or_else(|| read(&self.degraded))
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
}
