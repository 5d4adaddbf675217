//! What the service needs from an engine: apply a batch of log lines, answer
//! queries, and snapshot and restore its state for checkpoints. Any
//! `fairflow_serve::engine::Engine` implements it through
//! `engine_backend::EngineBackend`; `fairflow serve` uses
//! `service_engine::ServiceEngine` (the incremental engine, or the batch
//! oracle when the incremental engine cannot answer).

use fairflow_ingest::{LogLine, Rejection, Validator};
use fairflow_model::Time;
use fairflow_serve::OutputFormat;

/// A read the service answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The first `k` pending jobs in scheduling order.
    Top {
        /// How many.
        k: usize,
        /// How the answer is written.
        format: OutputFormat,
    },
    /// The fair-share table.
    Sshare {
        /// How the answer is written.
        format: OutputFormat,
    },
    /// Every pending job's priority and factors.
    Sprio {
        /// The normalized factors instead of the weighted ones.
        normalized: bool,
        /// How the answer is written.
        format: OutputFormat,
    },
    /// Why one job has its priority.
    Explain {
        /// The job id.
        job: String,
        /// JSON (otherwise readable text).
        json: bool,
    },
}

/// Why a query has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The thing asked about does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The engine failed (HTTP 500).
    #[error("{0}")]
    Internal(String),
}

/// Numbers the service exports as gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Pending, non-held jobs.
    pub pending_jobs: u64,
    /// Associations (accounts and user associations).
    pub associations: u64,
    /// The engine's current time.
    pub now: Time,
}

/// An engine the service can drive.
pub trait Backend: Send + 'static {
    /// Validate and apply a batch, in order; returns the rejected lines.
    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection>;
    /// Answer a read as text in the asked form (the same content as the command's).
    fn query(&mut self, query: &Query) -> Result<String, QueryError>;
    /// The whole state, for a checkpoint.
    fn snapshot(&mut self) -> Vec<u8>;
    /// Replace the state by a snapshot.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String>;
    /// Current gauges.
    fn gauges(&mut self) -> Gauges;
    /// The engine answering (`incremental`, `batch`), for the operator.
    fn engine_name(&self) -> &'static str {
        "custom"
    }
    /// A copy of the validator in force, which the applier uses to check each
    /// event before it is logged (so nothing the engine would reject is ever
    /// logged or acknowledged). `None`: the backend validates only in `apply`.
    fn validator(&self) -> Option<Validator> {
        None
    }
}
