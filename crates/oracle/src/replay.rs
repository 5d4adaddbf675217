//! Replaying a log through the book into the oracle: every line either
//! applies or is rejected with its line, field and reason.

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::Config;

use crate::State;

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReplayReport {
    /// Events applied.
    pub applied: u64,
    /// Rejected lines, in order.
    pub rejected: Vec<Rejection>,
}

/// The book fed so far, and what was applied and rejected.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Replay {
    book: Book,
    /// What was applied and rejected.
    pub report: ReplayReport,
}

impl Replay {
    /// A replay that has seen nothing, under `config` (the configuration in
    /// force before the first event).
    pub fn new(config: Config) -> Self {
        Replay {
            book: Book::new(config),
            report: ReplayReport::default(),
        }
    }

    /// A replay over an existing book that applied `applied` events.
    pub fn from_book(book: Book, applied: u64) -> Self {
        Replay {
            book,
            report: ReplayReport {
                applied,
                rejected: Vec::new(),
            },
        }
    }

    /// The book.
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// The book's state.
    pub fn state(&self) -> &State {
        self.book.state()
    }

    /// Feed one line: apply it or record its rejection.
    pub fn feed(&mut self, line: LogLine) {
        let outcome = line.event.and_then(|event| {
            let checked = self.book.check(line.line, &event)?;
            Ok((event, checked))
        });
        match outcome {
            Ok((event, checked)) => {
                // INCR_ONLY: evaluate once per distinct event time, after
                // every event of that time applied (`priority` module doc).
                if event.t > self.state().now
                    && self.report.applied > 0
                    && self.state().config.flags.incr_only
                {
                    self.remember_incr_only();
                }
                // Remembering changes no state: the token stays current.
                self.book
                    .apply_checked(line.line, &event, checked)
                    .expect("checked just before");
                self.report.applied += 1;
            }
            Err(rejection) => self.report.rejected.push(rejection),
        }
    }

    /// Feed every line.
    pub fn feed_all(&mut self, lines: impl IntoIterator<Item = LogLine>) {
        lines.into_iter().for_each(|l| self.feed(l));
    }

    /// Answer as of `t` (a query's `--at`): with `INCR_ONLY`, remember the
    /// last event time's priorities first. Earlier times change nothing.
    pub fn advance_to(&mut self, t: fairflow_model::Time) {
        if t <= self.state().now {
            return;
        }
        if self.report.applied > 0 && self.state().config.flags.incr_only {
            self.remember_incr_only();
        }
        self.book.advance_to(t);
    }

    fn remember_incr_only(&mut self) {
        let fs = crate::fairshare::user_factors(self.state());
        let memory = crate::priority::remembered_incr_only(self.state(), &fs);
        *self.book.priority_floor_mut() = memory.floors;
        for (job, priorities) in memory.pair_priorities {
            self.book.remember_pair_priorities(&job, &priorities);
        }
        self.book.forget_pair_floors_of_unqueued_jobs();
    }
}

impl Replay {
    /// The book and the applied count as a snapshot, in the one format both
    /// engines read (`fairflow_book::snapshot`; the rejected lines' history
    /// is not kept).
    pub fn snapshot(&self) -> Vec<u8> {
        fairflow_book::snapshot::encode(&self.book, self.report.applied)
    }

    /// A replay from a snapshot of either engine.
    pub fn restore(bytes: &[u8]) -> Result<Replay, fairflow_book::snapshot::SnapshotError> {
        let (book, applied) = fairflow_book::snapshot::decode(bytes)?;
        Ok(Replay::from_book(book, applied))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_book::Book;
    use fairflow_ingest::reader::read_events;

    #[test]
    fn a_snapshot_restores_exactly_the_same_replay() {
        let log = r#"{"op":"config","t":1,"set":{"PriorityDecayHalfLife":"1-0","PriorityFlags":"NO_FAIR_TREE"}}
{"op":"account","t":1,"name":"a","shares":"parent"}
{"op":"user","t":2,"user":"u","account":"a","shares":3}
{"op":"usage","t":3,"account":"a","user":"u","amount":123456789.5}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":64}}
{"op":"start","t":5,"job":"1"}
{"op":"bogus","t":6}
"#;
        let mut replay = Replay::new(Config::default());
        replay.feed_all(read_events(log.as_bytes()).map(Result::unwrap));
        // Push a usage value beyond 64 bits of frame units through the snapshot.
        let mut state = replay.state().clone();
        state
            .users
            .values_mut()
            .for_each(|u| u.usage.settled += 1u128 << 100);
        let replay = Replay::from_book(
            Book::from_state(state, replay.book().last_event_at()).unwrap(),
            replay.report.applied,
        );
        let restored = Replay::restore(&replay.snapshot()).unwrap();
        assert_eq!(restored.state(), replay.state());
        assert_eq!(restored.report.applied, replay.report.applied);
        assert_eq!(
            restored.book().last_event_at(),
            replay.book().last_event_at()
        );
        assert!(Replay::restore(b"{\"not\":1}").is_err());
    }
}
