//! The applier: the one thread that owns the engine, the durable event log and
//! the checkpoints. Writers' batches arrive on a bounded channel (a full
//! channel slows writers down; nothing is dropped). Batches waiting together
//! are committed together.
//!
//! **Apply, then log, then answer.** A commit group is applied to the engine
//! first (the engine checks every event with the one book's rules and reports
//! the rejected lines), then only the *accepted* events are appended to the
//! log, with one `fsync` for the group, and only then is each write answered.
//! So the log holds nothing the engine could not apply, and no second copy of
//! the book is needed to check events before they are logged (at a million
//! jobs that copy would double the memory). While a group is in flight the
//! engine is ahead of the log; nothing is answered from it until the group is
//! durable or rolled back:
//! - if the append fails (a full disk), the store has cut the segment back, the
//!   writes are refused (nothing of them is applied, now or after a restart),
//!   `/healthz` turns unhealthy (`health`), and the engine is **rebuilt** from
//!   the newest checkpoint plus the durable log before anything else is
//!   answered. While the log is failing, each group is preceded by a tiny
//!   probe record: if even that cannot be written, the group is refused without
//!   touching the engine; once it can, writes work again and `/healthz` turns
//!   healthy, without a restart;
//! - if the engine fails on a write (an error, or a panic caught at this
//!   boundary), that write and the ones applied before it in the group are
//!   refused, the engine is rebuilt, and the rest of the group goes on;
//! - if a rebuild fails, the service fails (`health`): nothing more is
//!   answered and `fairflow serve` exits non-zero so a supervisor restarts it.
//!
//! A write's [`Ticket`] is taken when its group starts; a writer that gave up
//! first (the HTTP layer's 408) abandoned it, and it is never applied. An
//! `Idempotency-Key` is logged with its write (`exactly_once`), and so is a
//! file tap's position (`taps::cursor`); recovery returns each tap's last.
//!
//! Recovery (`start`): the newest checkpoint that is intact, restorable and
//! covered by the log is restored (older kept ones are the fallback), then
//! every logged record after it is applied again, in order. A record the
//! engine fails on (only a log written before apply-then-log can hold one) is
//! isolated and quarantined (`quarantine`) with a loud message naming the
//! segment and the sequence, and the service starts without it. When the log
//! lost records a checkpoint covers, it goes on after the checkpoint, so
//! sequence numbers never go backwards. The log keeps the records from the
//! oldest kept checkpoint on.

use std::collections::BTreeSet;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{parse_event, LogLine, Rejection};
use fairflow_store::{Checkpoints, EventLog, OpenMode, Recovery};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Answer, Backend, Gauges, Query, QueryError};
use crate::budget::WriteBudget;
use crate::clock::EventLead;
use crate::exactly_once::{key_record, parse_key_record, Keys, Ticket};
use crate::health::Health;
use crate::log_limit::LogLimit;
use crate::metrics::Metrics;
use crate::quarantine::Quarantine;
use crate::taps::cursor::{TapCursor, TapCursors};

/// The answer to a write.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteOutcome {
    /// Events applied.
    pub accepted: u64,
    /// Lines rejected, with line numbers relative to the batch.
    pub rejected: Vec<RejectedLine>,
    /// The log sequence number of the batch's first record.
    pub first_sequence: u64,
    /// The write repeats an `Idempotency-Key` already applied: nothing was
    /// applied now, and the counts are the first write's (zero when the first
    /// write was before a restart).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
}

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

/// A rejected line as the service reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RejectedLine {
    /// 1-based line in the batch.
    pub line: u64,
    /// The field at fault.
    pub field: Option<String>,
    /// Why.
    pub reason: String,
}

impl From<Rejection> for RejectedLine {
    fn from(r: Rejection) -> Self {
        RejectedLine {
            line: r.line,
            field: r.field,
            reason: r.reason,
        }
    }
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
    sender: mpsc::Sender<Command>,
    health: Arc<Health>,
    budget: WriteBudget,
    lead: Option<EventLead>,
}

fn shutting_down() -> WriteError {
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
            .unwrap_or_else(|e| Err(QueryError::Internal(format!("rendering failed: {e}"))))
    }

    /// Ask a read: what the engine computed, to be rendered by the caller.
    pub async fn read_answer(&self, query: Query) -> Result<Answer, QueryError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Command::Read { query, reply })
            .await
            .map_err(|_| QueryError::Internal("the service is shutting down".into()))?;
        answer
            .await
            .map_err(|_| QueryError::Internal("the applier stopped".into()))?
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

/// A write waiting in a commit group.
struct PendingWrite {
    lines: Vec<LogLine>,
    key: Option<String>,
    cursor: Option<TapCursor>,
    reply: oneshot::Sender<Result<WriteOutcome, WriteError>>,
}

/// A write of the group applied to the engine, not yet durable.
struct AppliedWrite {
    /// The records to log: the key record and the cursor record (if any),
    /// then the accepted events.
    records: Vec<Vec<u8>>,
    /// How many of `records` come before the events.
    leading: u64,
    accepted: u64,
    rejected: Vec<Rejection>,
    key: Option<String>,
    cursor: Option<TapCursor>,
    reply: oneshot::Sender<Result<WriteOutcome, WriteError>>,
}

/// The text of a panic's payload.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Run an engine call, turning a panic into an error. Unwind safety is
/// asserted because an engine that failed is never used again as it is: it
/// is rebuilt from the durable state (module documentation).
fn guarded<T>(call: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(call))
        .unwrap_or_else(|panic| Err(format!("the engine panicked: {}", panic_message(panic))))
}

/// The record a commit group is preceded by while the log is failing: it
/// tells whether the disk takes writes again, and replay skips it.
const PROBE_RECORD: &[u8] = b"#probe";

/// Log records replayed together.
const REPLAY_CHUNK: usize = 10_000;

/// What a replay did.
#[derive(Debug, Default)]
struct Replayed {
    replayed: u64,
    rejected: u64,
    skipped_quarantined: u64,
    newly_quarantined: Vec<String>,
    keys: Keys,
    cursors: TapCursors,
}

/// Why a replay stopped.
enum ReplayError {
    /// The base state could not be restored (try an older checkpoint).
    Base(String),
    /// Anything else.
    Other(String),
}

/// Remember the idempotency key logged at `sequence`. Its write's counts
/// are not logged: a retry after a restart is answered `duplicate` with zero
/// counts.
fn remember_key(keys: &mut Keys, sequence: u64, key: &str) {
    let outcome = WriteOutcome {
        accepted: 0,
        rejected: Vec::new(),
        first_sequence: sequence + 1,
        duplicate: true,
    };
    keys.insert(key.to_string(), outcome);
}

/// Bring `backend` to the durable state: `base` (the state before record
/// `from`), then every record of `records` (the first is sequence `first`)
/// from `from` on, in order, except quarantined ones. A chunk the engine
/// fails on is replayed again record by record from `base`; the record that
/// fails alone is quarantined and the replay starts over without it. Every
/// attempt quarantines a record or isolates a new chunk, so this ends.
fn replay<B: Backend>(
    backend: &mut B,
    base: &[u8],
    records: &[Vec<u8>],
    first: u64,
    from: u64,
    quarantine: &Quarantine,
    log: &EventLog,
) -> Result<Replayed, ReplayError> {
    let mut quarantined = quarantine.records().map_err(ReplayError::Other)?;
    // Sequences applied one at a time: chunks the engine failed on.
    let mut alone: Vec<Range<u64>> = Vec::new();
    let mut newly_quarantined = Vec::new();
    'attempt: loop {
        guarded(|| backend.restore(base)).map_err(ReplayError::Base)?;
        let mut done = Replayed::default();
        let progress = crate::progress::bar(
            records.len() as u64,
            "records",
            "recovering the log",
            100_000,
        );
        let mut chunk: Vec<LogLine> = Vec::new();
        let mut chunk_range = 0..0;
        for (offset, record) in records.iter().enumerate() {
            progress.inc(1);
            let sequence = first + offset as u64;
            if record.first() == Some(&b'#') {
                // Not an event: an idempotency key, a tap's cursor, or a probe.
                let text = std::str::from_utf8(record).ok();
                if let Some(key) = text.and_then(parse_key_record) {
                    remember_key(&mut done.keys, sequence, key);
                } else if let Some(cursor) = text.and_then(TapCursor::parse) {
                    done.cursors.insert(cursor.tap, cursor.position);
                }
                continue;
            }
            if sequence < from {
                continue;
            }
            if quarantined.contains(&sequence) {
                tracing::error!(
                    "log record {sequence} is quarantined ({}): not applied",
                    quarantine.dir().display()
                );
                done.skipped_quarantined += 1;
                continue;
            }
            done.replayed += 1;
            let text = String::from_utf8_lossy(record);
            let line = LogLine {
                line: sequence + 1,
                event: parse_event(sequence + 1, &text),
            };
            let by_itself = alone.iter().any(|r| r.contains(&sequence));
            if (by_itself && !chunk.is_empty()) || chunk.len() == REPLAY_CHUNK {
                let lines = std::mem::take(&mut chunk);
                match guarded(|| backend.apply(lines)) {
                    Ok(rejected) => done.rejected += rejected.len() as u64,
                    Err(_) => {
                        alone.push(chunk_range.clone());
                        continue 'attempt;
                    }
                }
            }
            if by_itself {
                match guarded(|| backend.apply(vec![line])) {
                    Ok(rejected) => done.rejected += rejected.len() as u64,
                    Err(reason) => {
                        let segment = log
                            .segment_of(sequence)
                            .map_or_else(|| "the log".to_string(), |p| p.display().to_string());
                        let path = quarantine
                            .quarantine(sequence, record, &reason)
                            .map_err(ReplayError::Other)?;
                        let message = format!(
                            "QUARANTINED: log record {sequence} in {segment} makes the engine fail \
                             ({reason}); it is not applied, now or at any later start; its copy \
                             is {}",
                            path.display()
                        );
                        tracing::error!("{message}");
                        newly_quarantined.push(message);
                        quarantined.insert(sequence);
                        continue 'attempt;
                    }
                }
                continue;
            }
            if chunk.is_empty() {
                chunk_range.start = sequence;
            }
            chunk_range.end = sequence + 1;
            chunk.push(line);
        }
        progress.finish_and_clear();
        if !chunk.is_empty() {
            match guarded(|| backend.apply(chunk)) {
                Ok(rejected) => done.rejected += rejected.len() as u64,
                Err(_) => {
                    alone.push(chunk_range);
                    continue 'attempt;
                }
            }
        }
        if !alone.is_empty() && newly_quarantined.is_empty() {
            // A chunk failed, but none of its records alone: the state is
            // still the durable one (this attempt applied every record).
            tracing::warn!(
                "the engine failed replaying log records {alone:?} together but on no record \
                 alone (a bug); replayed them one by one"
            );
        }
        done.newly_quarantined = newly_quarantined;
        return Ok(done);
    }
}

/// Bring `backend` to the durable state of `checkpoints` and `log` (opened
/// with `recovery`): the newest checkpoint that is intact, covered by the
/// log and restorable (older ones are the fallback), or the empty state
/// `initial`, then the log after it. Returns the checkpoint's sequence.
fn bring_up<B: Backend>(
    backend: &mut B,
    initial: &[u8],
    checkpoints: &Checkpoints,
    quarantine: &Quarantine,
    log: &mut EventLog,
    recovery: &Recovery,
) -> Result<(u64, Replayed), String> {
    let mut candidates = Vec::new();
    for sequence in checkpoints.sequences().map_err(|e| e.to_string())? {
        if sequence < recovery.first_kept {
            tracing::warn!(
                "checkpoint {sequence} is older than the log's first record {}: not usable",
                recovery.first_kept
            );
            continue;
        }
        match checkpoints.read(sequence).map_err(|e| e.to_string())? {
            None => tracing::error!(
                "checkpoint {sequence} is damaged (its checksum fails): trying an older one"
            ),
            Some(body) => candidates.push((sequence, body)),
        }
    }
    for (sequence, body) in candidates {
        let records = &recovery.records;
        match replay(
            backend,
            &body,
            records,
            recovery.first_kept,
            sequence,
            quarantine,
            log,
        ) {
            Ok(done) => {
                if log.next_sequence() < sequence {
                    // The log lost records the checkpoint holds: go on after
                    // them, so sequence numbers never go backwards.
                    tracing::warn!(
                        "the log ends at record {} but checkpoint {sequence} covers more: \
                         continuing from {sequence}",
                        log.next_sequence()
                    );
                    log.skip_to(sequence).map_err(|e| e.to_string())?;
                }
                return Ok((sequence, done));
            }
            Err(ReplayError::Base(e)) => {
                tracing::error!(
                    "checkpoint {sequence} cannot be restored ({e}): trying an older one"
                )
            }
            Err(ReplayError::Other(e)) => return Err(e),
        }
    }
    if recovery.first_kept > 0 {
        return Err(format!(
            "the log starts at record {} but no usable checkpoint covers the records before it: \
             records are missing",
            recovery.first_kept
        ));
    }
    match replay(backend, initial, &recovery.records, 0, 0, quarantine, log) {
        Ok(done) => Ok((0, done)),
        Err(ReplayError::Base(e) | ReplayError::Other(e)) => Err(e),
    }
}

struct Applier<B: Backend> {
    backend: B,
    /// The engine's empty state (its configuration, no event): the base of a
    /// rebuild when there is no checkpoint.
    initial: Vec<u8>,
    log: EventLog,
    checkpoints: Checkpoints,
    quarantine: Quarantine,
    config: ApplierConfig,
    since_checkpoint: u64,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    /// Idempotency keys of recent writes.
    keys: Keys,
    /// Each file tap's last durable position.
    cursors: TapCursors,
    reject_log: LogLimit,
    /// The last append failed (the reason): the next group is preceded by a
    /// probe record.
    log_failing: Option<String>,
    /// The service failed: nothing more is answered.
    failed: bool,
}

impl<B: Backend> Applier<B> {
    fn recover(
        backend: B,
        config: ApplierConfig,
        metrics: Arc<Metrics>,
    ) -> Result<(Self, RecoveryReport), String> {
        let mut backend = backend;
        fairflow_store::private_dir(&config.data_dir).map_err(|e| e.to_string())?;
        let initial = guarded(|| backend.snapshot())
            .map_err(|e| format!("the engine cannot write its empty state: {e}"))?;
        let checkpoints = Checkpoints::new(config.data_dir.join("checkpoints"));
        let mode = if config.recover {
            OpenMode::Recover
        } else {
            OpenMode::Strict
        };
        let (mut log, recovery) = EventLog::open_with(config.data_dir.join("log"), mode)
            .map_err(|e| format!("the durable log cannot be opened: {e}"))?;
        let mut report = RecoveryReport {
            truncated_bytes: recovery.truncated_bytes,
            ..RecoveryReport::default()
        };
        if let Some(dropped) = &recovery.dropped {
            let text = format!(
                "--recover: {} is damaged at byte offset {}; kept the records before record {}, \
                 moved {} bytes ({} valid-looking records of unknown sequence) aside to {}",
                dropped.path.display(),
                dropped.offset,
                dropped.first_lost_sequence,
                dropped.bytes,
                dropped.valid_frames,
                dropped
                    .moved_to
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            tracing::error!("{text}");
            report.dropped = Some(text);
        }
        let quarantine = Quarantine::new(&config.data_dir);
        let (checkpoint_sequence, done) = bring_up(
            &mut backend,
            &initial,
            &checkpoints,
            &quarantine,
            &mut log,
            &recovery,
        )?;
        report.checkpoint_sequence = checkpoint_sequence;
        report.replayed = done.replayed;
        report.replay_rejected = done.rejected;
        report.quarantined = done.skipped_quarantined;
        report.newly_quarantined = done.newly_quarantined;
        report.engine = backend.engine_name();
        report.tap_cursors = done.cursors.clone();
        let since_checkpoint = log.next_sequence().saturating_sub(checkpoint_sequence);
        Ok((
            Applier {
                backend,
                initial,
                log,
                checkpoints,
                quarantine,
                config,
                since_checkpoint,
                metrics,
                health: Arc::new(Health::default()),
                keys: done.keys,
                cursors: done.cursors,
                reject_log: LogLimit::new(20, Duration::from_secs(10)),
                log_failing: None,
                failed: false,
            },
            report,
        ))
    }

    /// The engine is ahead of the durable state or failed: rebuild it from
    /// the newest checkpoint and the log on disk. If that fails, the service
    /// fails. Returns whether the service goes on.
    fn rebuild(&mut self, why: &str) -> bool {
        if self.log.is_damaged() {
            self.fail(format!(
                "{why}; the durable log could not be cut back after a failed append, so part of a \
                 refused write may be in it: the service stops rather than serve a state it \
                 cannot vouch for"
            ));
            return false;
        }
        tracing::warn!("{why}: rebuilding the engine from the checkpoint and the durable log");
        self.metrics.engine_rebuilds.inc();
        let started = Instant::now();
        let rebuilt = EventLog::open(self.config.data_dir.join("log"))
            .map_err(|e| e.to_string())
            .and_then(|(mut log, recovery)| {
                let (sequence, done) = bring_up(
                    &mut self.backend,
                    &self.initial,
                    &self.checkpoints,
                    &self.quarantine,
                    &mut log,
                    &recovery,
                )?;
                Ok((log, sequence, done))
            });
        match rebuilt {
            Ok((log, sequence, done)) => {
                self.log = log;
                self.since_checkpoint = self.log.next_sequence().saturating_sub(sequence);
                tracing::warn!(
                    "engine rebuilt in {:.1} s: checkpoint {sequence}, {} log records replayed",
                    started.elapsed().as_secs_f64(),
                    done.replayed
                );
                true
            }
            Err(e) => {
                self.fail(format!(
                    "{why}, and the engine could not be rebuilt from the durable state ({e}); \
                     the service stops"
                ));
                false
            }
        }
    }

    /// Refuse a write: nothing of it was applied.
    fn refuse(&self, reply: oneshot::Sender<Result<WriteOutcome, WriteError>>, error: WriteError) {
        self.metrics.writes_refused.inc();
        let _ = reply.send(Err(error));
    }

    fn fail(&mut self, reason: String) {
        self.failed = true;
        self.health.fail(reason);
    }

    fn commit_group(&mut self, group: Vec<PendingWrite>) {
        let group = self.answer_duplicates(group);
        if group.is_empty() {
            return;
        }
        if let Some(reason) = self.log_failing.clone() {
            // Does the disk take writes again? A probe costs a tiny record;
            // it spares the engine a rebuild for a write that cannot be logged.
            if let Err(e) = self.log.append(&[PROBE_RECORD.to_vec()]) {
                let reason = format!(
                    "the durable log cannot be written ({e}; first: {reason}); nothing of this \
                     write was applied, retry later"
                );
                for write in group {
                    self.refuse(write.reply, WriteError::Unavailable(reason.clone()));
                }
                if self.log.is_damaged() {
                    self.fail(reason);
                }
                return;
            }
            self.log_failing = None;
            self.health.set_degraded(None);
            tracing::info!("the durable log takes writes again");
        }
        let started = Instant::now();
        let mut rest = group.into_iter();
        let mut applied: Vec<AppliedWrite> = Vec::new();
        while let Some(write) = rest.next() {
            self.health.beat();
            match self.apply_write(write) {
                Ok(done) => applied.push(done),
                Err((reason, reply)) => {
                    // The engine failed: this write is refused, the ones
                    // applied before it (not logged yet) are rolled back too.
                    let error = WriteError::Engine(format!(
                        "the engine failed applying this write ({reason}); nothing of it was \
                         applied"
                    ));
                    self.refuse(reply, error);
                    for done in std::mem::take(&mut applied) {
                        let error = WriteError::Unavailable(
                            "another write committed with this one made the engine fail; \
                             nothing of this write was applied, retry it"
                                .to_string(),
                        );
                        self.refuse(done.reply, error);
                    }
                    if !self.rebuild(&format!("the engine failed applying a write ({reason})")) {
                        for write in rest {
                            self.refuse(write.reply, shutting_down());
                        }
                        return;
                    }
                }
            }
        }
        self.make_durable(applied, started);
    }

    /// Answer the writes whose idempotency key was already applied (or is in
    /// this group already); return the others.
    fn answer_duplicates(&mut self, group: Vec<PendingWrite>) -> Vec<PendingWrite> {
        let mut in_group = BTreeSet::new();
        let mut rest = Vec::with_capacity(group.len());
        for write in group {
            if let Some(key) = &write.key {
                if let Some(first) = self.keys.get(key) {
                    let _ = write.reply.send(Ok(WriteOutcome {
                        duplicate: true,
                        ..first.clone()
                    }));
                    continue;
                }
                if !in_group.insert(key.clone()) {
                    let error = WriteError::Unavailable(
                        "a write with this Idempotency-Key is being applied: retry to get its \
                         outcome"
                            .to_string(),
                    );
                    self.refuse(write.reply, error);
                    continue;
                }
            }
            rest.push(write);
        }
        rest
    }

    /// Apply one write to the engine; on an engine failure, the reason and
    /// where its answer goes.
    #[allow(clippy::type_complexity)]
    fn apply_write(
        &mut self,
        write: PendingWrite,
    ) -> Result<AppliedWrite, (String, oneshot::Sender<Result<WriteOutcome, WriteError>>)> {
        let PendingWrite {
            mut lines,
            key,
            cursor,
            reply,
        } = write;
        // Log only what a replay reads back as the same event (the bounds of
        // `fairflow_ingest::check`, whatever built it): the rest is refused now.
        let mut texts: Vec<(u64, Vec<u8>)> = Vec::with_capacity(lines.len());
        for l in &mut lines {
            let Ok(event) = &l.event else { continue };
            let text = event_to_line(event);
            match parse_event(l.line, &text) {
                Ok(back) if back == *event => texts.push((l.line, text.into_bytes())),
                Ok(_) => {
                    let reason = format!("would not replay as itself (logged as {text})");
                    l.event = Err(Rejection::new(l.line, None, reason));
                }
                Err(rejection) => l.event = Err(rejection),
            }
        }
        let parsed = lines.iter().filter(|l| l.event.is_ok()).count() as u64;
        let unparsed: Vec<Rejection> = lines
            .iter()
            .filter_map(|l| l.event.as_ref().err().cloned())
            .collect();
        let backend = &mut self.backend;
        let engine_rejected = match guarded(|| {
            if lines.is_empty() {
                Ok(Vec::new())
            } else {
                backend.apply(lines)
            }
        }) {
            Ok(rejected) => rejected,
            Err(reason) => return Err((reason, reply)),
        };
        let refused: BTreeSet<u64> = engine_rejected.iter().map(|r| r.line).collect();
        let mut records = Vec::with_capacity(texts.len() + 2);
        if let Some(key) = &key {
            records.push(key_record(key));
        }
        if let Some(cursor) = &cursor {
            records.push(cursor.record());
        }
        let leading = records.len() as u64;
        records.extend(
            texts
                .into_iter()
                .filter(|(line, _)| !refused.contains(line))
                .map(|(_, text)| text),
        );
        let (accepted, rejected) = tally(parsed, unparsed, engine_rejected);
        Ok(AppliedWrite {
            records,
            leading,
            accepted,
            rejected,
            key,
            cursor,
            reply,
        })
    }

    /// Log the accepted events of the applied writes with one sync, then
    /// answer them; if the log cannot take them, refuse them and roll the
    /// engine back.
    fn make_durable(&mut self, applied: Vec<AppliedWrite>, started: Instant) {
        if applied.is_empty() {
            return;
        }
        let records: Vec<Vec<u8>> = applied
            .iter()
            .flat_map(|w| w.records.iter().cloned())
            .collect();
        // A group whose every line was rejected logs nothing (and syncs
        // nothing), unless a tap's cursor goes with it.
        let appended = if records.is_empty() {
            Ok(self.log.next_sequence())
        } else {
            self.log.append(&records)
        };
        let mut sequence = match appended {
            Ok(first) => first,
            Err(e) => {
                let reason = format!(
                    "the durable log cannot be written ({e}); nothing of this write was applied, \
                     retry later"
                );
                // Unhealthy before anyone hears of the refusal.
                self.health.set_degraded(Some(format!(
                    "writes are refused: the durable log cannot be written ({e})"
                )));
                self.log_failing = Some(e.to_string());
                for write in applied {
                    self.refuse(write.reply, WriteError::Unavailable(reason.clone()));
                }
                self.rebuild(&format!("an append to the durable log failed ({e})"));
                return;
            }
        };
        self.health.beat();
        self.since_checkpoint += records.len() as u64;
        for write in applied {
            sequence += write.leading;
            self.log_rejected(&write.rejected);
            self.metrics.record_batch(
                write.accepted,
                write.rejected.len() as u64,
                started.elapsed(),
            );
            let outcome = WriteOutcome {
                accepted: write.accepted,
                rejected: write.rejected.into_iter().map(RejectedLine::from).collect(),
                first_sequence: sequence,
                duplicate: false,
            };
            sequence += write.records.len() as u64 - write.leading;
            if let Some(key) = write.key {
                self.keys.insert(key, outcome.clone());
            }
            if let Some(cursor) = write.cursor {
                self.cursors.insert(cursor.tap, cursor.position);
            }
            let _ = write.reply.send(Ok(outcome));
        }
        if self.since_checkpoint >= self.config.checkpoint_every {
            self.checkpoint();
        }
    }

    /// Log rejected lines, at most 20 every 10 seconds (the rest counted).
    fn log_rejected(&mut self, rejected: &[Rejection]) {
        let now = Instant::now();
        for r in rejected {
            match self.reject_log.admit(now) {
                Some(0) => tracing::warn!("rejected input: {r}"),
                Some(n) => {
                    tracing::warn!("rejected input: {r} ({n} more rejected lines not logged)")
                }
                None => {}
            }
        }
    }

    fn checkpoint(&mut self) {
        let sequence = self.log.next_sequence();
        let backend = &mut self.backend;
        let body = match guarded(|| backend.snapshot()) {
            Ok(body) => body,
            Err(e) => {
                self.rebuild(&format!("the engine failed writing a checkpoint ({e})"));
                return;
            }
        };
        // The log keeps the records from the oldest kept checkpoint on, so
        // each kept checkpoint can be the fallback.
        let written = self.checkpoints.write(sequence, &body).and_then(|()| {
            let oldest = self.checkpoints.oldest()?.unwrap_or(sequence);
            self.log.rotate(oldest)
        });
        match written {
            Ok(()) => {
                // The remembered idempotency keys and the taps' cursors are
                // logged again after the checkpoint, so they outlive the
                // segments it lets go.
                let mut again: Vec<Vec<u8>> = self.keys.names().map(key_record).collect();
                again.extend(
                    self.cursors
                        .iter()
                        .map(|(tap, position)| TapCursor::new(tap, position.clone()).record()),
                );
                if !again.is_empty() {
                    if let Err(e) = self.log.append(&again) {
                        tracing::warn!(
                            "logging the idempotency keys and tap cursors again failed: {e}"
                        );
                    }
                }
                self.since_checkpoint = 0;
                self.metrics.checkpoints.inc();
            }
            Err(e) => {
                // Try again after half the interval, not at every write.
                self.since_checkpoint = self.config.checkpoint_every / 2;
                tracing::warn!(
                    "checkpoint at {sequence} failed (the log still holds everything): {e}"
                )
            }
        }
    }

    fn run(mut self, mut receiver: mpsc::Receiver<Command>) {
        while let Some(command) = receiver.blocking_recv() {
            let mut pending = vec![command];
            while pending.len() < self.config.max_group {
                match receiver.try_recv() {
                    Ok(next) => pending.push(next),
                    Err(_) => break,
                }
            }
            // Busy from here until the commands are answered: `/healthz`
            // turns unhealthy if no step of them completes in time (a hung
            // engine call).
            let health = self.health.clone();
            let _busy = health.busy();
            let mut group = Vec::new();
            for command in pending {
                if self.failed {
                    break;
                }
                match command {
                    Command::Write {
                        lines,
                        key,
                        ticket,
                        cursor,
                        reply,
                    } => {
                        // A write its writer abandoned (timed out) is never applied.
                        if ticket.is_none_or(|t| t.take()) {
                            group.push(PendingWrite {
                                lines,
                                key,
                                cursor,
                                reply,
                            });
                        }
                    }
                    other => {
                        // Reads see every write that arrived before them.
                        if !group.is_empty() {
                            self.commit_group(std::mem::take(&mut group));
                        }
                        if !self.failed {
                            self.answer(other);
                        }
                    }
                }
            }
            if !group.is_empty() && !self.failed {
                self.commit_group(group);
            }
            if self.failed {
                // Nothing more is answered: the handles see the applier gone.
                return;
            }
        }
        // Shutting down: leave a checkpoint so the next start is quick.
        if self.since_checkpoint > 0 && self.log_failing.is_none() {
            self.checkpoint();
            tracing::info!(
                "final checkpoint written at record {}",
                self.log.next_sequence()
            );
        }
    }

    fn answer(&mut self, command: Command) {
        self.health.beat();
        match command {
            Command::Read { query, reply } => {
                let backend = &mut self.backend;
                let answer = catch_unwind(AssertUnwindSafe(|| backend.answer(&query)))
                    .unwrap_or_else(|panic| {
                        Err(QueryError::Internal(format!(
                            "the engine panicked: {}",
                            panic_message(panic)
                        )))
                    });
                if let Err(QueryError::Internal(reason)) = &answer {
                    self.rebuild(&format!("the engine failed answering a read ({reason})"));
                }
                let _ = reply.send(answer);
            }
            Command::Gauges { reply } => {
                let backend = &mut self.backend;
                match catch_unwind(AssertUnwindSafe(|| backend.gauges())) {
                    Ok(gauges) => {
                        let _ = reply.send(gauges);
                    }
                    Err(panic) => {
                        let reason = panic_message(panic);
                        self.rebuild(&format!("the engine panicked reading gauges ({reason})"));
                    }
                }
            }
            Command::Write { .. } => unreachable!("writes are grouped"),
        }
    }
}

/// Recover the state from `config.data_dir` and start the applier thread.
/// Returns the handle, the recovery report and the thread (which ends when
/// every handle is dropped, after a final checkpoint, or when the service
/// failed).
pub fn start<B: Backend>(
    backend: B,
    config: ApplierConfig,
    metrics: Arc<Metrics>,
) -> Result<(ApplierHandle, RecoveryReport, std::thread::JoinHandle<()>), String> {
    let (applier, report) = Applier::recover(backend, config.clone(), metrics)?;
    let health = applier.health.clone();
    let (sender, receiver) = mpsc::channel(config.queue_capacity.max(1));
    let thread = std::thread::Builder::new()
        .name("fairflow-applier".into())
        .spawn({
            let health = health.clone();
            move || {
                // A panic outside the guarded engine calls ends the applier:
                // the service fails (`health`), so it exits non-zero and a
                // supervisor restarts it, rather than answering 503 forever.
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| applier.run(receiver))) {
                    health.fail(format!(
                        "the applier thread panicked ({}); the service stops",
                        panic_message(panic)
                    ));
                }
            }
        })
        .map_err(|e| format!("cannot start the applier thread: {e}"))?;
    let handle = ApplierHandle {
        sender,
        health,
        budget: WriteBudget::default(),
        lead: None,
    };
    Ok((handle, report, thread))
}
