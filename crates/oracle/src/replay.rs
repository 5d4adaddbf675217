//! Replaying a log through the validator into the oracle's state: every line
//! either applies or is rejected with its line, field and reason.

use fairflow_ingest::{LogLine, Rejection, Validator};
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

/// The validator and the oracle state, fed together.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Replay {
    /// The catalog deciding what is possible.
    pub validator: Validator,
    /// The oracle's state.
    pub state: State,
    /// What has been applied and rejected so far.
    pub report: ReplayReport,
}

impl Replay {
    /// Start from an empty cluster under `config`.
    pub fn new(config: Config) -> Self {
        Replay {
            validator: Validator::new(config.clone()),
            state: State::new(config),
            report: ReplayReport::default(),
        }
    }

    /// Feed one line of a log.
    pub fn feed(&mut self, line: LogLine) {
        let outcome = line.event.and_then(|event| {
            self.validator.check(line.line, &event)?;
            Ok(event)
        });
        match outcome {
            Ok(event) => {
                // INCR_ONLY: evaluate once per distinct event time, after
                // every event of that time applied (`priority` module doc).
                if event.t > self.state.now
                    && self.report.applied > 0
                    && self.state.config.flags.incr_only
                {
                    let fs = crate::fairshare::user_factors(&self.state);
                    crate::priority::remember_incr_only(&mut self.state, &fs);
                }
                self.state.apply(&event);
                self.report.applied += 1;
            }
            Err(rejection) => self.report.rejected.push(rejection),
        }
    }

    /// Feed every line of a log.
    pub fn feed_all(&mut self, lines: impl IntoIterator<Item = LogLine>) {
        lines.into_iter().for_each(|l| self.feed(l));
    }

    /// Move a query's time forward to `t` (`--at`), as a `tick` would: with
    /// `INCR_ONLY`, the last event time's priorities are remembered first.
    /// Earlier times change nothing.
    pub fn advance_to(&mut self, t: fairflow_model::Time) {
        if t <= self.state.now {
            return;
        }
        if self.report.applied > 0 && self.state.config.flags.incr_only {
            let fs = crate::fairshare::user_factors(&self.state);
            crate::priority::remember_incr_only(&mut self.state, &fs);
        }
        self.state.advance_to(t);
    }
}

impl Replay {
    /// The whole replay (validator, state, report) as bytes, for a checkpoint.
    pub fn snapshot(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("the state is always serialisable")
    }

    /// A replay from a [`Replay::snapshot`].
    pub fn restore(bytes: &[u8]) -> Result<Replay, String> {
        postcard::from_bytes(bytes).map_err(|e| format!("not a fairflow oracle snapshot: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        replay
            .state
            .users
            .values_mut()
            .for_each(|u| u.usage.settled += 1u128 << 100);
        let restored = Replay::restore(&replay.snapshot()).unwrap();
        assert_eq!(restored.state, replay.state);
        assert_eq!(restored.report, replay.report);
        assert_eq!(restored.validator.now(), replay.validator.now());
        assert!(Replay::restore(b"{\"not\":1}").is_err());
    }
}
