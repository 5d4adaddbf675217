//! One interface over fairflow's engines, so that every command and the live
//! service can run on either: the batch oracle ([`BatchEngine`], which
//! recomputes everything from scratch for each answer) or the incremental
//! engine ([`IncrementalEngine`], over `fairflow_dataflow::Engine`, which
//! maintains the answers as events arrive). Both must give equal answers;
//! `--engine batch` exists so anyone can compare.
//!
//! The incremental engine maintains every fair-share algorithm and
//! priority model.
//!
//! Snapshots (the service's checkpoints): each engine restores its own; the
//! batch engine also restores the incremental engine's
//! (`fairflow_dataflow::snapshot::oracle_replay`), so a data directory
//! checkpointed by the incremental engine can be served by either. The
//! incremental engine cannot read the batch engine's snapshots (an oracle
//! `State` does not hold its ledger's frame-unit books).

use fairflow_ingest::{LogLine, Rejection, Validator};
use fairflow_model::report::{FairshareRow, FairshareTable, JobPriority};
use fairflow_model::{Algorithm, Config, Time};
use fairflow_oracle::{fairshare, priority, Replay};

/// Why `explain` has no answer for a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// The job is active but has no priority now (running without
    /// `CALCULATE_RUNNING`, or before its begin time).
    #[error("job {job} has no priority as of {now}: it is running (PriorityFlags=CALCULATE_RUNNING evaluates running jobs) or not yet past its begin time")]
    NoPriority {
        /// The job.
        job: String,
        /// The time asked about.
        now: Time,
    },
    /// No such job is pending, held or running.
    #[error("job {job} is not pending, held or running as of {now}")]
    Unknown {
        /// The job.
        job: String,
        /// The time asked about.
        now: Time,
    },
}

/// Why a job has its priority: the job's priority, the algorithm, and the
/// fair-share rows from `root` to its user association.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The job's priority and factors.
    pub job: JobPriority,
    /// The fair-share algorithm in force.
    pub algorithm: Algorithm,
    /// The fair-share path, root first.
    pub path: Vec<FairshareRow>,
}

/// An engine: applies batches of log lines and answers queries as of its time.
pub trait Engine {
    /// `batch` or `incremental`.
    fn name(&self) -> &'static str;
    /// Validate and apply a batch in order; returns the rejected lines.
    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection>;
    /// Answer as of `t` from now on (never moves backwards).
    fn advance_to(&mut self, t: Time);
    /// The time answers are as of (`None` before any event).
    fn now(&self) -> Option<Time>;
    /// The configuration in force.
    fn config(&self) -> &Config;
    /// Events applied so far.
    fn applied(&self) -> u64;
    /// The fair-share table.
    fn fairshare(&mut self) -> FairshareTable;
    /// Every listed job's priority (the rows of `sprio`).
    fn priorities(&mut self) -> Vec<JobPriority>;
    /// The first `k` jobs of the ranked pending queue.
    fn top(&mut self, k: usize) -> Vec<JobPriority>;
    /// Why `job` has its priority.
    fn explain(&mut self, job: &str) -> Result<Explanation, ExplainError>;
    /// Pending, non-held jobs (the queue's length).
    fn queue_len(&mut self) -> u64;
    /// Accounts and user associations.
    fn associations(&self) -> u64;
    /// The whole state as bytes, for a checkpoint.
    fn snapshot(&self) -> Vec<u8>;
    /// Replace the state by a snapshot.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String>;
    /// The validator in force: a copy decides, before an event is logged,
    /// whether this engine will accept it.
    fn validator(&self) -> &Validator;
}

/// Was `snapshot` written by the incremental engine (its header)? The batch
/// engine restores both formats, the incremental engine only its own.
pub fn is_incremental_snapshot(snapshot: &[u8]) -> bool {
    fairflow_dataflow::snapshot::is_engine_snapshot(snapshot)
}

/// The rows from `root` down to the user association `(account, user)`, in
/// that order, from a table in tree order; empty when it is not there.
pub fn path_to(rows: &[FairshareRow], account: &str, user: &str) -> Vec<FairshareRow> {
    let Some(index) = rows
        .iter()
        .position(|r| r.account == account && r.user.as_deref() == Some(user))
    else {
        return Vec::new();
    };
    // In tree order, each ancestor is the nearest earlier account row one level up.
    let mut path = vec![rows[index].clone()];
    let mut depth = rows[index].depth;
    for row in rows[..index].iter().rev() {
        if depth == 0 {
            break;
        }
        if row.user.is_none() && row.depth + 1 == depth {
            path.push(row.clone());
            depth = row.depth;
        }
    }
    path.reverse();
    path
}

/// One job's explanation from either engine: its priority (`None` when it
/// is not listed), whether the engine knows the job at all, and the
/// fair-share table for the path to its association.
fn explanation(
    job: &str,
    now: Time,
    found: Option<JobPriority>,
    known: bool,
    table: impl FnOnce() -> FairshareTable,
) -> Result<Explanation, ExplainError> {
    let Some(found) = found else {
        let job = job.to_string();
        return Err(if known {
            ExplainError::NoPriority { job, now }
        } else {
            ExplainError::Unknown { job, now }
        });
    };
    let table = table();
    let path = path_to(&table.rows, &found.account, &found.user);
    Ok(Explanation {
        job: found,
        algorithm: table.algorithm,
        path,
    })
}

/// The batch oracle as an engine: every answer is recomputed from the state.
#[derive(Debug, Clone)]
pub struct BatchEngine {
    /// The validator and the oracle's state.
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

    fn validator(&self) -> &Validator {
        &self.replay.validator
    }

    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection> {
        let before = self.replay.report.rejected.len();
        self.replay.feed_all(lines);
        self.replay.report.rejected[before..].to_vec()
    }

    fn advance_to(&mut self, t: Time) {
        self.replay.advance_to(t);
    }

    fn now(&self) -> Option<Time> {
        self.replay
            .validator
            .now()
            .map(|t| t.max(self.replay.state.now))
    }

    fn config(&self) -> &Config {
        &self.replay.state.config
    }

    fn applied(&self) -> u64 {
        self.replay.report.applied
    }

    fn fairshare(&mut self) -> FairshareTable {
        fairshare::table(&self.replay.state)
    }

    fn priorities(&mut self) -> Vec<JobPriority> {
        let factors = fairshare::user_factors(&self.replay.state);
        priority::evaluate(&self.replay.state, &factors)
    }

    fn top(&mut self, k: usize) -> Vec<JobPriority> {
        let mut queue = priority::queue(&self.priorities());
        queue.truncate(k);
        queue
    }

    fn explain(&mut self, job: &str) -> Result<Explanation, ExplainError> {
        let now = self.replay.state.now;
        let found = self.priorities().into_iter().find(|p| p.job == job);
        let known = self.replay.state.jobs.contains_key(job);
        explanation(job, now, found, known, || self.fairshare())
    }

    fn queue_len(&mut self) -> u64 {
        self.replay
            .state
            .jobs
            .values()
            .filter(|j| j.is_pending())
            .count() as u64
    }

    fn associations(&self) -> u64 {
        (self.replay.state.accounts.len() + self.replay.state.users.len()) as u64
    }

    fn snapshot(&self) -> Vec<u8> {
        self.replay.snapshot()
    }

    /// Restores its own snapshots and the incremental engine's.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        self.replay = if fairflow_dataflow::snapshot::is_engine_snapshot(snapshot) {
            fairflow_dataflow::snapshot::oracle_replay(snapshot).map_err(|e| e.to_string())?
        } else {
            Replay::restore(snapshot)?
        };
        Ok(())
    }
}

/// The incremental engine (`fairflow_dataflow::Engine`: timely workers
/// maintaining the tree, fair-share inputs and job priorities) as an
/// [`Engine`].
///
/// Its worker threads stopping is a bug, reported by a panic naming it.
#[derive(Debug)]
pub struct IncrementalEngine {
    /// The dataflow engine.
    pub engine: fairflow_dataflow::Engine,
}

fn engine_failed(e: fairflow_dataflow::EngineError) -> ! {
    panic!("the incremental engine failed: {e}")
}

impl IncrementalEngine {
    /// Start `workers` timely workers in this process under `config`.
    pub fn start(
        workers: usize,
        config: Config,
    ) -> Result<IncrementalEngine, fairflow_dataflow::EngineError> {
        Ok(IncrementalEngine {
            engine: fairflow_dataflow::Engine::start(workers, config)?,
        })
    }

    /// Start under a command-line layout (`--workers`, `--processes`,
    /// `--process`, `--hostfile`): the process hosting worker 0 gets the
    /// engine; any other process runs its workers until the computation
    /// ends and gets `None`.
    pub fn start_layout(
        layout: &fairflow_dataflow::cluster::WorkerLayout,
        config: Config,
    ) -> Result<Option<IncrementalEngine>, fairflow_dataflow::EngineError> {
        Ok(fairflow_dataflow::Engine::start_layout(layout, config)?
            .map(|engine| IncrementalEngine { engine }))
    }
}

impl Engine for IncrementalEngine {
    fn name(&self) -> &'static str {
        "incremental"
    }

    fn validator(&self) -> &Validator {
        self.engine.validator()
    }

    fn apply(&mut self, lines: Vec<LogLine>) -> Vec<Rejection> {
        match self.engine.apply_batch(lines) {
            Ok(report) => report.rejected,
            Err(e) => engine_failed(e),
        }
    }

    fn advance_to(&mut self, t: Time) {
        if let Err(e) = self.engine.advance_to(t) {
            engine_failed(e)
        }
    }

    fn now(&self) -> Option<Time> {
        self.engine
            .validator()
            .now()
            .map(|t| t.max(self.engine.now()))
    }

    fn config(&self) -> &Config {
        self.engine.config()
    }

    fn applied(&self) -> u64 {
        self.engine.applied()
    }

    fn fairshare(&mut self) -> FairshareTable {
        self.engine
            .fairshare_table()
            .unwrap_or_else(|e| engine_failed(e))
    }

    fn priorities(&mut self) -> Vec<JobPriority> {
        self.engine
            .priorities()
            .unwrap_or_else(|e| engine_failed(e))
    }

    fn top(&mut self, k: usize) -> Vec<JobPriority> {
        self.engine.top(k).unwrap_or_else(|e| engine_failed(e))
    }

    fn explain(&mut self, job: &str) -> Result<Explanation, ExplainError> {
        let now = self.engine.now();
        let found = self.engine.job(job).unwrap_or_else(|e| engine_failed(e));
        let known = self.engine.job_book().state().jobs.contains_key(job);
        explanation(job, now, found, known, || self.fairshare())
    }

    fn queue_len(&mut self) -> u64 {
        self.engine
            .job_book()
            .state()
            .jobs
            .values()
            .filter(|j| j.is_pending())
            .count() as u64
    }

    fn associations(&self) -> u64 {
        let state = self.engine.job_book().state();
        (state.accounts.len() + state.users.len()) as u64
    }

    /// The dataflow engine's snapshot (`fairflow_dataflow::snapshot`): its
    /// books, which the batch engine can restore too.
    fn snapshot(&self) -> Vec<u8> {
        self.engine.snapshot().unwrap_or_else(|e| engine_failed(e))
    }

    /// Restores the incremental engine's snapshots (of any worker count); a
    /// foreign (the batch engine's) or damaged one is an error and changes
    /// nothing.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String> {
        match self.engine.restore(snapshot) {
            Ok(()) => Ok(()),
            Err(fairflow_dataflow::EngineError::Snapshot(e)) => Err(e.to_string()),
            Err(e) => engine_failed(e),
        }
    }
}
