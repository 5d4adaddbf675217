//! What makes a write's answer true: a write answered "timed out" (408) was
//! never applied, and a retried write (same `Idempotency-Key`) is applied once.
//!
//! - [`Ticket`]: a write is either *taken* by the applier (it will be logged,
//!   applied and answered) or *abandoned* by its writer (it never will be),
//!   whichever happens first; the HTTP layer answers 408 only after winning
//!   the abandonment.
//! - [`Keys`]: the idempotency keys of recent writes with their outcomes. A
//!   key is logged with its write (a `#idempotency <key>` record before the
//!   write's events, skipped as an event at replay), so it survives a
//!   restart, and all remembered keys are logged again after each checkpoint
//!   (so they outlive the segments it lets go); the newest [`MAX_KEYS`] keys
//!   are remembered.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::write_outcome::WriteOutcome;

/// The most idempotency keys remembered.
pub const MAX_KEYS: usize = 10_000;
/// The longest idempotency key, bytes.
pub const MAX_KEY_BYTES: usize = 128;
/// The prefix of a key record in the log.
pub const KEY_RECORD_PREFIX: &str = "#idempotency ";

const OPEN: u8 = 0;
const TAKEN: u8 = 1;
const ABANDONED: u8 = 2;

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Ticket(Arc<AtomicU8>);

impl Ticket {
    fn claim(&self, state: u8) -> bool {
        self.0
            .compare_exchange(OPEN, state, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The writer gives up: true if the applier had not taken the write (it
    /// never will), false if it had (its answer is coming).
    pub fn abandon(&self) -> bool {
        self.claim(ABANDONED)
    }

    /// The applier takes the write: false if the writer abandoned it.
    pub fn take(&self) -> bool {
        self.claim(TAKEN)
    }
}

/// Abandons its ticket when dropped (a request cancelled by its connection).
#[derive(Debug)]
pub struct AbandonOnDrop(pub Ticket);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// Is `key` a usable idempotency key (1 to [`MAX_KEY_BYTES`] visible ASCII
/// characters)?
pub fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY_BYTES).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

/// The key of a log record written by [`key_record`], if it is one.
pub fn parse_key_record(record: &str) -> Option<&str> {
    record
        .strip_prefix(KEY_RECORD_PREFIX)
        .filter(|k| valid_key(k))
}

/// The log record that carries `key`.
pub fn key_record(key: &str) -> Vec<u8> {
    format!("{KEY_RECORD_PREFIX}{key}").into_bytes()
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Keys {
    outcomes: BTreeMap<String, WriteOutcome>,
    order: VecDeque<String>,
}

impl Keys {
    /// The outcome of the write that carried `key`, if it is remembered.
    pub fn get(&self, key: &str) -> Option<&WriteOutcome> {
        self.outcomes.get(key)
    }

    /// The keys remembered, oldest first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// Remember `key`'s outcome, forgetting the oldest key beyond [`MAX_KEYS`].
    pub fn insert(&mut self, key: String, outcome: WriteOutcome) {
        if self.outcomes.insert(key.clone(), outcome).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > MAX_KEYS {
            if let Some(oldest) = self.order.pop_front() {
                self.outcomes.remove(&oldest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_is_taken_or_abandoned_never_both() {
        let ticket = Ticket::default();
        assert!(ticket.take());
        assert!(!ticket.abandon());
        let ticket = Ticket::default();
        drop(AbandonOnDrop(ticket.clone()));
        assert!(!ticket.take());
    }

    #[test]
    fn keys_round_trip_through_their_record_and_are_bounded() {
        assert_eq!(
            parse_key_record(std::str::from_utf8(&key_record("abc-1")).unwrap()),
            Some("abc-1")
        );
        assert_eq!(parse_key_record("{\"op\":\"tick\"}"), None);
        assert!(!valid_key("has space") && !valid_key("") && !valid_key(&"x".repeat(129)));
        let mut keys = Keys::default();
        let outcome = WriteOutcome {
            accepted: 1,
            rejected: Vec::new(),
            first_sequence: 0,
            duplicate: false,
        };
        for i in 0..=MAX_KEYS {
            keys.insert(format!("k{i}"), outcome.clone());
        }
        assert!(keys.get("k0").is_none());
        assert!(keys.get(&format!("k{MAX_KEYS}")).is_some());
    }
}
