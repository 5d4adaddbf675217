//! The applier's interface: [`ApplierHandle`] (how writers, readers and
//! the taps reach the applier thread, over a bounded channel), the
//! [`Command`]s it carries, the applier's configuration and recovery report,
//! why a write was refused ([`WriteError`]), and how a body becomes lines
//! and counts ([`parse_body`], [`tally`]).

use std::path::PathBuf;
use std::sync::Arc;

use fairflow_ingest::{parse_event, LogLine, Rejection};
use tokio::sync::{mpsc, oneshot};

use super::WriteOutcome;
use crate::backend::{Answer, Gauges, Query, QueryError};
use crate::budget::WriteBudget;
use crate::clock::EventLead;
use crate::exactly_once::Ticket;
use crate::health::Health;
use crate::taps::cursor::{TapCursor, TapCursors};

/// Why a write was not applied. Nothing of a refused write is applied, now
/// or after a restart, so it may be retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The service cannot take writes now (the durable log cannot be
    /// written, the same key is in flight); retrying later may work.
    #[error("{0}")]
    Unavailable(String),
    /// The service is shutting down or failed.
    #[error("the service is shutting down or failed")]
    Stopped,
    /// The engine failed applying this write (a bug); it was rebuilt from the
    /// durable state.
    #[error("{0}")]
    Engine(String),
}

/// A request to the applier.
pub enum Command {
    /// Apply a batch of parsed lines (line numbers relative to the batch).
    Write {
        /// The batch.
        lines: Vec<LogLine>,
        /// The writer's idempotency key, if any.
        key: Option<String>,
        /// Taken by the applier unless the writer abandoned it first.
        ticket: Option<Ticket>,
        /// A file tap's position after these lines, logged with them.
        cursor: Option<TapCursor>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<WriteOutcome, WriteError>>,
    },
    /// Answer a read: the engine is read here, the answer rendered by the
    /// reader (`backend::Answer`).
    Read {
        /// The read.
        query: Query,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<Answer, QueryError>>,
    },
    /// Current gauges.
    Gauges {
        /// Where the answer goes.
        reply: oneshot::Sender<Gauges>,
    },
}

/// The applier's settings.
#[derive(Debug, Clone)]
pub struct ApplierConfig {
    /// Where the log and checkpoints live.
    pub data_dir: PathBuf,
    /// Records between checkpoints.
    pub checkpoint_every: u64,
    /// Capacity of the command channel (batches waiting).
    pub queue_capacity: usize,
    /// Most batches committed together.
    pub max_group: usize,
    /// Open a damaged log anyway, keeping what is provably intact
    /// (`--recover`; see `fairflow_store::wal`).
    pub recover: bool,
}

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The sequence the restored checkpoint covered (0 without one).
    pub checkpoint_sequence: u64,
    /// Log records applied again.
    pub replayed: u64,
    /// Of which rejected (as they were the first time).
    pub replay_rejected: u64,
    /// Bytes of torn tail cut from the log.
    pub truncated_bytes: u64,
    /// Quarantined log records skipped (`quarantine`).
    pub quarantined: u64,
    /// What this start quarantined, one message per record.
    pub newly_quarantined: Vec<String>,
    /// What `--recover` dropped from a damaged log, said plainly.
    pub dropped: Option<String>,
    /// The engine serving after recovery ([`Backend::engine_name`]).
    pub engine: &'static str,
    /// Each file tap's last logged position (`taps::cursor`).
    pub tap_cursors: TapCursors,
}

/// The handle writers and readers use.
#[derive(Clone)]
pub struct ApplierHandle {
    pub(super) sender: mpsc::Sender<Command>,
    pub(super) health: Arc<Health>,
    pub(super) budget: WriteBudget,
    pub(super) lead: Option<EventLead>,
}

pub(super) fn shutting_down() -> WriteError {
    WriteError::Stopped
}

impl ApplierHandle {
    /// The service's health, as the applier sees it.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// The bytes of writes every writer of this handle shares (`budget`).
    pub fn write_budget(&self) -> &WriteBudget {
        &self.budget
    }

    /// This handle with a write budget of `cap_bytes`: the same handle if its
    /// budget has that size already (so writers given clones of it share
    /// one budget), else one with a new budget.
    pub fn with_write_budget(mut self, cap_bytes: usize) -> Self {
        if WriteBudget::new(cap_bytes).cap_bytes() != self.budget.cap_bytes() {
            self.budget = WriteBudget::new(cap_bytes);
        }
        self
    }

    /// This handle with events timed more than `lead` ahead of its clock
    /// rejected before they reach the applier (`clock::EventLead`).
    pub fn with_event_lead(mut self, lead: Option<EventLead>) -> Self {
        self.lead = lead;
        self
    }

    /// Submit a batch; waits (without dropping) while the queue is full.
    pub async fn write(&self, lines: Vec<LogLine>) -> Result<WriteOutcome, WriteError> {
        self.write_with(lines, None, None).await
    }

    /// Submit a batch with an idempotency key (a write with a key already
    /// applied is answered with its first outcome, `duplicate`, and not
    /// applied again) and a ticket (if the writer abandons it before the
    /// applier takes it, it is never applied).
    pub async fn write_with(
        &self,
        lines: Vec<LogLine>,
        key: Option<String>,
        ticket: Option<Ticket>,
    ) -> Result<WriteOutcome, WriteError> {
        self.send_write(lines, key, ticket, None).await
    }

    /// Submit a file tap's batch with its position after these lines: both
    /// are logged in one append, the position even when every line is
    /// rejected (or there is none).
    pub async fn write_from_tap(
        &self,
        lines: Vec<LogLine>,
        cursor: TapCursor,
    ) -> Result<WriteOutcome, WriteError> {
        self.send_write(lines, None, None, Some(cursor)).await
    }

    async fn send_write(
        &self,
        lines: Vec<LogLine>,
        key: Option<String>,
        ticket: Option<Ticket>,
        cursor: Option<TapCursor>,
    ) -> Result<WriteOutcome, WriteError> {
        let mut lines = lines;
        if let Some(lead) = &self.lead {
            lead.refuse_early(&mut lines);
        }
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Command::Write {
                lines,
                key,
                ticket,
                cursor,
                reply,
            })
            .await
            .map_err(|_| shutting_down())?;
        answer.await.map_err(|_| shutting_down())?
    }

    /// Ask a read, its whole text (rendered off the applier, here).
    pub async fn read(&self, query: Query) -> Result<String, QueryError> {
        let answer = self.read_answer(query).await?;
        tokio::task::spawn_blocking(move || answer.into_text())
            .await
            .unwrap_or_else(|e| Err(QueryError::Rendering(e)))
    }

    /// Ask a read: what the engine computed, to be rendered by the caller.
    pub async fn read_answer(&self, query: Query) -> Result<Answer, QueryError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Command::Read { query, reply })
            .await
            .map_err(|_| QueryError::ShuttingDown)?;
        answer.await.map_err(|_| QueryError::ApplierStopped)?
    }

    /// Current gauges.
    pub async fn gauges(&self) -> Option<Gauges> {
        let (reply, answer) = oneshot::channel();
        self.sender.send(Command::Gauges { reply }).await.ok()?;
        answer.await.ok()
    }

    /// Is the applier thread gone (stopped or failed)?
    pub fn stopped(&self) -> bool {
        self.sender.is_closed()
    }

    /// Batches waiting in the queue.
    pub fn queued(&self) -> usize {
        self.sender.max_capacity() - self.sender.capacity()
    }
}

/// Parse the lines of a request body (numbered from 1) into log lines.
pub fn parse_body(body: &[u8], max_line_bytes: usize) -> Vec<LogLine> {
    let mut lines = Vec::new();
    for (index, raw) in body.split(|b| *b == b'\n').enumerate() {
        let line = index as u64 + 1;
        let event = if raw.len() > max_line_bytes {
            Err(Rejection::new(
                line,
                None,
                format!("line is longer than {max_line_bytes} bytes"),
            ))
        } else {
            match std::str::from_utf8(raw) {
                Err(_) => Err(Rejection::new(line, None, "not valid UTF-8")),
                Ok(text) => {
                    let text = text.trim();
                    if text.is_empty() || text.starts_with('#') {
                        continue;
                    }
                    parse_event(line, text)
                }
            }
        };
        lines.push(LogLine { line, event });
    }
    lines
}

/// The counts of one applied batch: every line received is either accepted
/// or rejected, exactly once. `unparsed` are the lines that did not parse;
/// `backend_rejected` is what the engine rejected, which may repeat the
/// unparsed lines (the engines report every line they did not apply), so a
/// line already rejected as unparsed is not counted again. Returns the
/// accepted count and the rejections in line order.
pub fn tally(
    parsed: u64,
    unparsed: Vec<Rejection>,
    backend_rejected: Vec<Rejection>,
) -> (u64, Vec<Rejection>) {
    let unparsed_lines: std::collections::BTreeSet<u64> = unparsed.iter().map(|r| r.line).collect();
    let mut rejected = unparsed;
    let mut refused = 0u64;
    for r in backend_rejected {
        if !unparsed_lines.contains(&r.line) {
            refused += 1;
            rejected.push(r);
        }
    }
    rejected.sort_by_key(|r| r.line);
    (parsed.saturating_sub(refused), rejected)
}
