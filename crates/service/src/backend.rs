//! What the applier needs from what it drives: apply a batch of log lines,
//! answer queries, and snapshot and restore its state for checkpoints. An
//! engine (`fairflow_engine::Engine`) implements it through
//! `engine_backend::EngineBackend`; the service's tests drive a recording
//! double.
//!
//! A read's [`Answer`] is what the engine computed, not its text: the
//! applier only reads the engine, and the HTTP layer renders the answer's
//! [`Pieces`] off the applier as it sends them (`stream`), so no answer is
//! rendered whole on the applier and a rendering failure never touches the
//! engine.

use crate::held_tables::{SharedTable, TablesFull};
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::Selection;
use fairflow_model::Time;
use fairflow_serve::sprio::slurm_format::SlurmView;
use fairflow_serve::OutputFormat;

/// A read the service answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The first `k` pending jobs in scheduling order.
    Top {
        /// How many.
        k: usize,
        /// How many to skip first (paging: `offset` 0 is the first job).
        offset: usize,
        /// How the answer is written.
        format: OutputFormat,
        /// The accounts, users and partitions asked for (`top -A -u -p`).
        selection: Selection,
    },
    /// The fair-share table.
    Sshare {
        /// How the answer is written.
        format: OutputFormat,
        /// The accounts and users asked for (`sshare -A -u`).
        selection: Selection,
    },
    /// Every pending job's priority and factors.
    Sprio {
        /// The normalized factors instead of the weighted ones.
        normalized: bool,
        /// How the answer is written.
        format: OutputFormat,
        /// The jobs, users, accounts and partitions asked for
        /// (`sprio -j -u -A -p`).
        selection: Selection,
        /// Slurm's fixed-width form (`-o %...`, `-l`, `-w`), instead of
        /// `format`.
        slurm: Option<SlurmView>,
    },
    /// Every job the engine holds, one line each: its id, a tab, and the
    /// job as the Slurm follower reads squeue's (`LiveJob` as JSON: user,
    /// account, state, submit and start times, spec), for its full
    /// comparison (`follow_slurm`).
    JobPhases,
    /// Every listed job in slurmrestd's `GET /slurm/v0.0.46/jobs` shape
    /// (`fairflow_serve::slurm_json::render_jobs`).
    SlurmJobs,
    /// The fair-share table itself, shared with the other reads of the same
    /// state ([`Answer::FairshareTable`]): `/metrics` writes its
    /// per-association families from its rows (`metrics::ScrapedRows`), the
    /// Slurm follower reads its raw usage.
    FairshareTable,
    /// The priority of the job first in line, as text (empty while the
    /// queue is empty): `/metrics`' `fairflow_queue_head_priority`.
    QueueHead,
    /// Who is over- and under-served (`fairflow audit`).
    Audit {
        /// How many associations per level and side, and waiting users.
        top: usize,
        /// The least fair-share factor of a waiting user listed, in millionths.
        min_factor_millionths: u64,
        /// How the answer is written.
        format: OutputFormat,
    },
    /// One job's place in line (`fairflow position`).
    Position {
        /// The job id.
        job: String,
        /// JSON (otherwise readable text).
        json: bool,
        /// How many accounts with entries ahead are listed (those with the
        /// most; `usize::MAX`: all).
        top_accounts: usize,
    },
    /// The fair-share tree as an SVG icicle (`fairflow plot tree`).
    PlotTree {
        /// What the boxes' colour shows.
        color: fairflow_serve::plot::tree::TreeColor,
        /// Children narrower than this many pixels are one "N others" box.
        min_width_px: u32,
        /// The picture's width in pixels.
        width_px: u32,
    },
    /// What the live page shows of the fair-share table, from one read of
    /// it: the accounts with the most usage and the tree picture
    /// (`fairflow_serve::overview`).
    Overview {
        /// How many accounts.
        accounts: usize,
        /// What the tree's colour shows.
        color: fairflow_serve::plot::tree::TreeColor,
        /// Children narrower than this many pixels are one "N others" box.
        min_width_px: u32,
        /// The tree picture's width in pixels.
        width_px: u32,
    },
    /// A copy of the state a what-if starts from (`whatif`: the proposal is
    /// evaluated on it off the applier).
    WhatIfBase,
    /// A what-if answered on the applier from the engine's live state when
    /// the engine takes the proposal (`Engine::whatif_rows`: its first `k`
    /// rows, rendered in `format`), else [`Answer::WhatIfBase`], for the
    /// oracle off the applier.
    WhatIf {
        /// The proposal.
        proposal: fairflow_engine::whatif::Proposal,
        /// Rows of each list.
        k: usize,
        /// The answer's format.
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

/// A read's text in pieces, each rendered when it is taken; a piece that
/// cannot be rendered is an error (the first piece: the answer's error).
pub type Pieces = Box<dyn Iterator<Item = Result<String, QueryError>> + Send>;

/// What the applier hands over for a read.
pub enum Answer {
    /// The text, rendered.
    Text(String),
    /// The text in pieces, rendered as they are taken (off the applier).
    Pieces(Pieces),
    /// Pieces that read one table while they are sent: the answer holds it
    /// (counted by `held_tables` while it is sent).
    Holding(Pieces, SharedTable),
    /// A copy of the state for a what-if ([`Query::WhatIfBase`]).
    WhatIfBase(Box<fairflow_engine::whatif::Base>),
    /// The fair-share table ([`Query::FairshareTable`]).
    FairshareTable {
        /// The table, shared.
        table: std::sync::Arc<fairflow_model::report::FairshareTable>,
        /// The engine's time when it was read.
        now: fairflow_model::Time,
    },
}

impl Answer {
    /// Pieces rendered by `render` when the first is taken: the data moves
    /// into the closure, the rendering happens wherever the pieces are read.
    pub fn later<I>(render: impl FnOnce() -> Result<I, QueryError> + Send + 'static) -> Answer
    where
        I: Iterator<Item = String> + Send + 'static,
    {
        let pieces = std::iter::once_with(render).flat_map(|rendered| -> Pieces {
            match rendered {
                Ok(pieces) => Box::new(pieces.map(Ok)),
                Err(error) => Box::new(std::iter::once(Err(error))),
            }
        });
        Answer::Pieces(Box::new(pieces))
    }

    /// The same pieces, holding `table` while they are sent.
    pub fn holding(self, table: SharedTable) -> Answer {
        match self {
            Answer::Pieces(pieces) => Answer::Holding(pieces, table),
            other => other,
        }
    }

    /// The whole text (pieces joined, rendered here).
    pub fn into_text(self) -> Result<String, QueryError> {
        match self {
            Answer::Text(text) => Ok(text),
            Answer::Pieces(pieces) | Answer::Holding(pieces, _) => {
                // Joined once, at its length (no doubling of a long text).
                let pieces: Vec<String> = pieces.collect::<Result<_, _>>()?;
                Ok(pieces.concat())
            }
            Answer::WhatIfBase(_) => Err(QueryError::NotText("a what-if's base")),
            Answer::FairshareTable { .. } => Err(QueryError::NotText("the fair-share table")),
        }
    }
}

/// Why a query has no answer; [`QueryError::kind`] is the HTTP status it
/// is answered with.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The engine has no answer: what was asked about does not exist
    /// (`EngineError::is_not_found`), else the engine failed.
    #[error(transparent)]
    Engine(#[from] fairflow_engine::EngineError),
    /// The thing asked about does not exist, in a backend's own words.
    #[error("{0}")]
    NotFound(String),
    /// An answer asked for as text that has none (naming the answer).
    #[error("{0} is not a text answer")]
    NotText(&'static str),
    /// A Slurm `--format` (sprio's `-o`) that does not parse.
    #[error(transparent)]
    Format(#[from] fairflow_serve::sprio::slurm_format::FormatError),
    /// A picture that cannot be drawn as asked.
    #[error(transparent)]
    Plot(#[from] fairflow_serve::plot::PlotError),
    /// The answer would hold more than the service lets answers hold now.
    #[error(transparent)]
    Busy(#[from] TablesFull),
    /// The engine panicked answering (the message of the panic).
    #[error("the engine panicked: {0}")]
    Panicked(String),
    /// Rendering an answer off the applier failed.
    #[error("rendering failed: {0}")]
    Rendering(#[from] tokio::task::JoinError),
    /// A job's phase could not be written as JSON.
    #[error(transparent)]
    Encoding(#[from] serde_json::Error),
    /// The service is shutting down: the applier takes no more reads.
    #[error("the service is shutting down")]
    ShuttingDown,
    /// The applier stopped before it answered.
    #[error("the applier stopped")]
    ApplierStopped,
}

/// The four ways a read fails, as HTTP answers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryErrorKind {
    /// The thing asked about does not exist (HTTP 404).
    NotFound,
    /// The query cannot be answered as asked (HTTP 400).
    BadRequest,
    /// Retry later (HTTP 503).
    Busy,
    /// The engine or the service failed (HTTP 500); the applier rebuilds
    /// an engine that failed answering.
    Internal,
}

impl QueryError {
    /// Which of the four ways this read failed.
    pub fn kind(&self) -> QueryErrorKind {
        match self {
            QueryError::Engine(e) if e.is_not_found() => QueryErrorKind::NotFound,
            QueryError::NotFound(_) => QueryErrorKind::NotFound,
            QueryError::NotText(_) | QueryError::Format(_) | QueryError::Plot(_) => {
                QueryErrorKind::BadRequest
            }
            QueryError::Busy(_) => QueryErrorKind::Busy,
            QueryError::Engine(_)
            | QueryError::Panicked(_)
            | QueryError::Rendering(_)
            | QueryError::Encoding(_)
            | QueryError::ShuttingDown
            | QueryError::ApplierStopped => QueryErrorKind::Internal,
        }
    }
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
    /// `PriorityCalcPeriod` in force, seconds (0: usage accrues
    /// continuously; no boundaries to settle).
    pub calc_period_secs: i64,
}

/// What [`Backend::apply_logging_own`] returns: the rejected lines, and the
/// events the backend applied on its own, each with the line it went before.
pub type AppliedOwn = (Vec<Rejection>, Vec<(u64, fairflow_model::Event)>);

/// Why a [`Backend`] call failed: the engine's state is unknown, and the
/// applier rebuilds it from the durable state. Its text is the cause's own.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The engine failed (applying, writing or restoring its state).
    #[error(transparent)]
    Engine(#[from] fairflow_engine::EngineError),
    /// The engine panicked; the panic's message.
    #[error("the engine panicked: {0}")]
    Panicked(String),
    /// A backend other than the engine's failed (one a test or an embedder
    /// drives); what it says.
    #[error("{0}")]
    Other(String),
}

/// An engine the service can drive.
pub trait Backend: Send + 'static {
    /// Validate and apply a batch, in order; returns the rejected lines. An
    /// error means the engine failed: its state is unknown, and the applier
    /// rebuilds it from the durable state ([`Backend::restore`] and replay).
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, BackendError>;
    /// [`Backend::apply`], with the events the backend applied on its own
    /// among the lines (the fair-share history's `tick`s, `history`), each
    /// with the line it was applied just before: the applier logs them
    /// there, so that a replay of the log applies them too. By default none.
    fn apply_logging_own(&mut self, lines: Vec<LogLine>) -> Result<AppliedOwn, BackendError> {
        Ok((self.apply(lines)?, Vec::new()))
    }
    /// Answer a read as text in the asked form (the same content as the command's).
    fn query(&mut self, query: &Query) -> Result<String, QueryError>;
    /// Answer a read with what the engine computed, to be rendered off the
    /// applier ([`Answer`]); by default, [`Backend::query`]'s text.
    fn answer(&mut self, query: &Query) -> Result<Answer, QueryError> {
        self.query(query).map(Answer::Text)
    }
    /// The whole state, for a checkpoint; an error means the engine failed.
    fn snapshot(&mut self) -> Result<Vec<u8>, BackendError>;
    /// Replace the state by a snapshot.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), BackendError>;
    /// Current gauges.
    fn gauges(&mut self) -> Gauges;
    /// The engine answering (`incremental`, `batch`), for the operator.
    fn engine_name(&self) -> &'static str {
        "custom"
    }
}
