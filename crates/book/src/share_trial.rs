//! Share changes tried on the live book and taken back exactly
//! ([`Book::begin_share_trial`], [`Book::end_share_trial`]): the live
//! what-if (`fairflow_dataflow::engine::whatif_live`) applies a proposal of
//! share changes, reads what the engine answers, and restores the book.
//!
//! A share change at the state's time moves only the association's
//! `shares`, the time of the last accepted event and the change record:
//! time does not move (no settlement, reset or re-base falls due), no job
//! and no index changes. So a trial keeps each association's shares before
//! and that time, and puts both back; the change record is the caller's
//! (it takes the trial's changes to send them, and sends the same subjects
//! again after the trial ends). Restoring costs the proposal's size, where
//! a copy of the book cost its whole tree (about 37 ms at 100,000
//! associations: `perf/results/`).

use fairflow_model::event::Op;
use fairflow_model::{Event, Shares, Time};

use crate::Book;

/// What a trial of share changes overwrote, to put back
/// ([`Book::end_share_trial`]).
#[derive(Debug)]
#[must_use = "a trial is taken back with Book::end_share_trial"]
pub struct ShareTrial {
    /// The time of the last accepted event before the trial.
    last_event_at: Option<Time>,
    /// Each applied event's association and its shares before, in the
    /// order applied.
    overwritten: Vec<(Target, Shares)>,
}

/// The association a share change sets.
#[derive(Debug)]
enum Target {
    Account(String),
    User { account: String, user: String },
}

impl Book {
    /// Apply `events` (line, event), each of which must set only the shares
    /// of an existing account or user association at the state's time, and
    /// return what they overwrote. `None` when one is not such an event or
    /// the book rejects it: then the events applied before it are taken
    /// back and the book is as it was (but for its change record, which
    /// names their associations).
    pub fn begin_share_trial(&mut self, events: &[(u64, Event)]) -> Option<ShareTrial> {
        let mut trial = ShareTrial {
            last_event_at: self.last_event_at,
            overwritten: Vec::with_capacity(events.len()),
        };
        for (line, event) in events {
            let Some(before) = self.shares_before(event) else {
                self.end_share_trial(trial);
                return None;
            };
            let applied = self
                .check(*line, event)
                .and_then(|checked| self.apply_checked(*line, event, checked));
            if applied.is_err() {
                self.end_share_trial(trial);
                return None;
            }
            trial.overwritten.push(before);
        }
        Some(trial)
    }

    /// Take a trial back: every association's shares as before it (the
    /// last applied first), and the time of the last accepted event. The
    /// change record is left as it is (see the module documentation).
    pub fn end_share_trial(&mut self, trial: ShareTrial) {
        for (target, shares) in trial.overwritten.into_iter().rev() {
            let entry = match &target {
                Target::Account(name) => self.state.accounts.get_mut(name).map(|a| &mut a.shares),
                Target::User { account, user } => self
                    .state
                    .users
                    .get_mut(&(account.clone(), user.clone()))
                    .map(|u| &mut u.shares),
            };
            if let Some(entry) = entry {
                *entry = shares;
            }
        }
        self.last_event_at = trial.last_event_at;
        self.version += 1;
    }

    /// Does `op` set only the shares of an existing account or user
    /// association (what a trial takes, at the state's time)?
    pub fn sets_only_existing_shares(&self, op: &Op) -> bool {
        self.share_target(op).is_some()
    }

    /// The association `event` sets the shares of and its shares now, when
    /// `event` sets only the shares of an existing association at the
    /// state's time.
    fn shares_before(&self, event: &Event) -> Option<(Target, Shares)> {
        if event.t != self.state.now {
            return None;
        }
        self.share_target(&event.op)
    }

    /// The association `op` sets the shares of and its shares now, when
    /// `op` sets only the shares of an existing association.
    fn share_target(&self, op: &Op) -> Option<(Target, Shares)> {
        match op {
            Op::Account {
                name,
                parent: None,
                shares: Some(_),
                priority: None,
            } => {
                let shares = self.state.accounts.get(name)?.shares;
                Some((Target::Account(name.clone()), shares))
            }
            Op::User {
                user,
                account,
                shares: Some(_),
                priority: None,
            } => {
                let key = (account.clone(), user.clone());
                let shares = self.state.users.get(&key)?.shares;
                Some((
                    Target::User {
                        account: key.0,
                        user: key.1,
                    },
                    shares,
                ))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use fairflow_model::event::Op;
    use fairflow_model::{Event, Shares};

    use crate::Book;

    fn event(t: i64, op: Op) -> Event {
        Event { t, op }
    }

    fn account(name: &str, parent: Option<&str>, shares: Option<u32>) -> Op {
        Op::Account {
            name: name.to_string(),
            parent: parent.map(str::to_string),
            shares: shares.map(Shares::Value),
            priority: None,
        }
    }

    fn user(account: &str, user: &str, shares: Option<u32>) -> Op {
        Op::User {
            user: user.to_string(),
            account: account.to_string(),
            shares: shares.map(Shares::Value),
            priority: None,
        }
    }

    /// Accounts `a` (10 shares) and `b` (20) under root, user `u` (5) in
    /// `a`, the last event at 100, then time moved to 160 by a tick.
    fn site() -> Book {
        let mut book = Book::new(Default::default());
        let events = [
            event(100, account("a", Some("root"), Some(10))),
            event(100, account("b", Some("root"), Some(20))),
            event(100, user("a", "u", Some(5))),
        ];
        for (line, e) in events.iter().enumerate() {
            book.apply(line as u64 + 1, e).expect("applies");
        }
        book.advance_to(160);
        book
    }

    #[test]
    fn a_trial_sets_the_shares_and_its_end_restores_the_book_exactly() {
        let mut book = site();
        let before = book.clone();
        let trial = book
            .begin_share_trial(&[
                (1, event(160, account("a", None, Some(70)))),
                (2, event(160, user("a", "u", Some(9)))),
                // The same association twice: its first value comes back.
                (3, event(160, account("a", None, Some(3)))),
            ])
            .expect("share changes at the state's time");
        assert_eq!(
            book.state().accounts.get("a").unwrap().shares,
            Shares::Value(3)
        );
        let key = ("a".to_string(), "u".to_string());
        assert_eq!(
            book.state().users.get(&key).unwrap().shares,
            Shares::Value(9)
        );
        assert_eq!(book.last_event_at(), Some(160));
        book.end_share_trial(trial);
        assert_eq!(
            book.state().accounts.get("a").unwrap().shares,
            Shares::Value(10)
        );
        assert_eq!(
            book.state().users.get(&key).unwrap().shares,
            Shares::Value(5)
        );
        assert_eq!(book.last_event_at(), Some(100));
        assert!(book == before, "the book is as it was");
    }

    #[test]
    fn a_trial_takes_only_share_changes_of_existing_associations_now() {
        let before = site();
        let refused = [
            // Another time.
            (1, event(170, account("a", None, Some(7)))),
            // A new association.
            (1, event(160, account("c", None, Some(7)))),
            // A move, not only shares.
            (1, event(160, account("a", Some("b"), Some(7)))),
            // A user association that does not exist.
            (1, event(160, user("b", "u", Some(7)))),
            // Not a share change.
            (1, event(160, Op::Tick)),
        ];
        for refused in refused {
            let mut book = before.clone();
            // A valid change first: it is taken back too.
            let proposal = [(1, event(160, user("a", "u", Some(8)))), refused];
            assert!(book.begin_share_trial(&proposal).is_none(), "{proposal:?}");
            assert!(book == before, "nothing applied stays: {proposal:?}");
        }
    }
}
