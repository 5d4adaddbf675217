//! The batch oracle as an [`Engine`]: every answer is recomputed from the
//! book by `fairflow_oracle`.

use std::collections::BTreeMap;

use fairflow_book::Book;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::first_entries::first_entries;
use fairflow_model::report::{FairshareTable, JobPriority, SharedJobs};
use fairflow_model::{Config, Time};
use fairflow_oracle::{fairshare, priority, Replay};

use crate::{Engine, EngineError};

/// The batch oracle; see the module documentation.
#[derive(Debug, Clone)]
pub struct BatchEngine {
    /// The book and what was applied and rejected.
    pub replay: Replay,
}

impl BatchEngine {
    /// An empty cluster under `config`.
    pub fn new(config: Config) -> Self {
        BatchEngine {
            replay: Replay::new(config),
        }
    }
}

impl Engine for BatchEngine {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn book(&self) -> &Book {
        self.replay.book()
    }

    fn applied(&self) -> u64 {
        self.replay.report.applied
    }

    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, EngineError> {
        let before = self.replay.report.rejected.len();
        self.replay.feed_all(lines);
        Ok(self.replay.report.rejected.split_off(before))
    }

    fn advance_to(&mut self, t: Time) -> Result<(), EngineError> {
        self.replay.advance_to(t);
        Ok(())
    }

    fn fairshare(&mut self) -> Result<FairshareTable, EngineError> {
        Ok(fairshare::table(self.replay.state()))
    }

    fn user_factors(&mut self) -> Result<BTreeMap<(String, String), f64>, EngineError> {
        Ok(fairshare::user_factors(self.replay.state()))
    }

    fn priorities(&mut self) -> Result<Vec<JobPriority>, EngineError> {
        let state = self.replay.state();
        let factors = fairshare::user_factors(state);
        Ok(priority::evaluate(state, &factors))
    }

    fn top(&mut self, k: usize) -> Result<SharedJobs, EngineError> {
        // Each row evaluated, offered and dropped: the oracle's whole
        // evaluation, holding only the first `k` entries.
        let state = self.replay.state();
        let factors = fairshare::user_factors(state);
        Ok(first_entries(priority::listed(state, &factors), k).into())
    }

    fn job(&mut self, id: &str) -> Result<Option<JobPriority>, EngineError> {
        Ok(self.priorities()?.into_iter().find(|p| p.job == id))
    }

    fn snapshot(&self) -> Result<Vec<u8>, EngineError> {
        Ok(self.replay.snapshot())
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), EngineError> {
        self.replay = Replay::restore(snapshot)?;
        Ok(())
    }
}
