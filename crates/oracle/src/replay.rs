//! Replaying a log through the validator into the oracle's state: every line
//! either applies or is rejected with its line, field and reason.

use fairflow_ingest::{LogLine, Rejection, Validator};
use fairflow_model::Config;

use crate::State;

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Events applied.
    pub applied: u64,
    /// Rejected lines, in order.
    pub rejected: Vec<Rejection>,
}

/// The validator and the oracle state, fed together.
#[derive(Debug, Clone)]
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
}
