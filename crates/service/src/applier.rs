//! The applier: the one thread that owns the engine, the durable event log and
//! the checkpoints. Writers' batches arrive on a bounded channel (a full
//! channel slows writers down; nothing is dropped). Batches waiting together
//! are committed together: one append and one `fsync` for all of them, then
//! each is applied in order and answered. An event is acknowledged only after
//! its record is on disk. Every `checkpoint_every` records a checkpoint is
//! written and the log segments it covers are dropped.
//!
//! Before anything is logged, each event is checked by a copy of the engine's
//! validator (`Backend::validator`): a rejected event is answered as rejected
//! and never logged, so the log holds only events the engine accepts. A
//! failed append (a full disk) is rolled back by the store: the write is
//! refused, nothing of it is applied, now or after a restart, `/healthz` is
//! unhealthy until an append succeeds again. An engine that panics applying a
//! batch fails the service (`health`), and the records at fault are isolated
//! and quarantined at the next start (`quarantine`).
//!
//! Recovery (`start`): the newest valid checkpoint is restored, then every
//! logged record after it is applied again, in order, except quarantined
//! ones. Records are canonical event lines, so a record that was rejected when
//! first applied is rejected again identically: the state after recovery is
//! exactly the state after the acknowledged (and any durable but
//! unacknowledged) events.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{parse_event, LogLine, Rejection, Validator};
use fairflow_store::{Checkpoints, EventLog, OpenMode, Recovery};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, Gauges, Query, QueryError};
use crate::exactly_once::{key_record, parse_key_record, Keys, Ticket};
use crate::health::Health;
use crate::metrics::Metrics;
use crate::quarantine::Quarantine;

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
    /// applied now, and the counts are the first write's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
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
        /// Where the answer goes.
        reply: oneshot::Sender<Result<WriteOutcome, String>>,
    },
    /// Answer a read.
    Read {
        /// The read.
        query: Query,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<String, QueryError>>,
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
    /// Open a damaged log anyway, keeping what is intact (`--recover`).
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
    /// Bytes of torn or corrupt tail cut from the log.
    pub truncated_bytes: u64,
    /// Quarantined log records skipped (`quarantine`).
    pub quarantined: u64,
    /// What `--recover` dropped from a damaged log, said plainly.
    pub dropped: Option<String>,
    /// The engine serving after recovery ([`Backend::engine_name`]).
    pub engine: &'static str,
}

/// The handle writers and readers use.
#[derive(Clone)]
pub struct ApplierHandle {
    sender: mpsc::Sender<Command>,
    health: Arc<Health>,
}

impl ApplierHandle {
    /// The service's health, as the applier sees it.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Submit a batch; waits (without dropping) while the queue is full.
    pub async fn write(&self, lines: Vec<LogLine>) -> Result<WriteOutcome, String> {
        self.write_with(lines, None, None).await
    }

    /// Submit a batch with an idempotency key (a write with a key already
    /// applied is answered with its first outcome, `duplicate`, and not applied
    /// again) and a ticket (if the writer abandons it first, it is never applied).
    pub async fn write_with(
        &self,
        lines: Vec<LogLine>,
        key: Option<String>,
        ticket: Option<Ticket>,
    ) -> Result<WriteOutcome, String> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Command::Write {
                lines,
                key,
                ticket,
                reply,
            })
            .await
            .map_err(|_| "the service is shutting down".to_string())?;
        answer
            .await
            .map_err(|_| "the applier stopped".to_string())?
    }

    /// Ask a read.
    pub async fn read(&self, query: Query) -> Result<String, QueryError> {
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

/// A write waiting in a commit group: its lines, its idempotency key and
/// where its answer goes.
type PendingWrite = (
    Vec<LogLine>,
    Option<String>,
    oneshot::Sender<Result<WriteOutcome, String>>,
);

struct Applier<B: Backend> {
    backend: B,
    /// A copy of the engine's validator, ahead of the engine by the events
    /// being committed; `None` when the backend has none.
    validator: Option<Validator>,
    log: EventLog,
    checkpoints: Checkpoints,
    quarantine: Quarantine,
    config: ApplierConfig,
    since_checkpoint: u64,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    failed: Option<String>,
    /// Idempotency keys of recent writes.
    keys: Keys,
}

/// The text of a panic's payload.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Apply `lines`, turning a panic of the engine into an error.
fn apply_guarded<B: Backend>(
    backend: &mut B,
    lines: Vec<LogLine>,
) -> Result<Vec<Rejection>, String> {
    catch_unwind(AssertUnwindSafe(|| backend.apply(lines))).map_err(panic_message)
}

/// Replays log records at recovery in chunks, each guarded: a chunk that makes
/// the engine fail is marked suspect (the next start isolates its record).
struct Replayer<'a, B: Backend> {
    backend: &'a mut B,
    quarantine: &'a Quarantine,
    chunk: Vec<LogLine>,
    /// The sequence numbers the chunk spans.
    chunk_range: std::ops::Range<u64>,
    rejected: u64,
    /// Idempotency keys found in the log, with the sequence after each.
    keys: Keys,
}

impl<B: Backend> Replayer<'_, B> {
    fn push(&mut self, sequence: u64, text: &str) -> Result<(), String> {
        if let Some(key) = parse_key_record(text) {
            // A write's idempotency key, not an event.
            self.remember_key(sequence, key);
            return Ok(());
        }
        if self.chunk.is_empty() {
            self.chunk_range.start = sequence;
        }
        self.chunk_range.end = sequence + 1;
        self.chunk.push(LogLine {
            line: sequence + 1,
            event: parse_event(sequence + 1, text),
        });
        if self.chunk.len() == 10_000 {
            self.flush()?;
        }
        Ok(())
    }

    /// Remember the idempotency key logged at `sequence`. Its write's counts
    /// are not logged: a retry after a restart is answered `duplicate` with
    /// zero counts.
    fn remember_key(&mut self, sequence: u64, key: &str) {
        let outcome = WriteOutcome {
            accepted: 0,
            rejected: Vec::new(),
            first_sequence: sequence + 1,
            duplicate: true,
        };
        self.keys.insert(key.to_string(), outcome);
    }

    /// Apply the chunk.
    fn flush(&mut self) -> Result<(), String> {
        let chunk = std::mem::take(&mut self.chunk);
        if chunk.is_empty() {
            return Ok(());
        }
        match apply_guarded(self.backend, chunk) {
            Ok(rejected) => {
                self.rejected += rejected.len() as u64;
                Ok(())
            }
            Err(panic) => {
                let range = self.chunk_range.clone();
                self.quarantine.mark_suspect(range.clone(), &panic)?;
                Err(format!(
                    "the engine failed replaying log records {}..{} ({panic}); they are marked \
                     suspect: start again to find the record at fault and quarantine it",
                    range.start, range.end
                ))
            }
        }
    }

    /// Apply one record of a suspect range alone; if it fails, quarantine it.
    fn alone(&mut self, sequence: u64, record: &[u8], text: &str) -> Result<(), String> {
        self.flush()?;
        let line = LogLine {
            line: sequence + 1,
            event: parse_event(sequence + 1, text),
        };
        match apply_guarded(self.backend, vec![line]) {
            Ok(rejected) => {
                self.rejected += rejected.len() as u64;
                Ok(())
            }
            Err(panic) => {
                let path = self.quarantine.quarantine(sequence, record, &panic)?;
                self.quarantine.clear_suspects()?;
                Err(format!(
                    "QUARANTINED: log record {sequence} makes the engine fail ({panic}); it is \
                     moved aside to {}: start again to serve every other record without it",
                    path.display()
                ))
            }
        }
    }
}

/// Restore the newest checkpoint that is intact, not older than the log's
/// first record, and accepted by the backend; older ones are the fallback.
/// Returns the sequence it covers (0 without one).
fn restore_checkpoint<B: Backend>(
    backend: &mut B,
    checkpoints: &Checkpoints,
    recovery: &Recovery,
) -> Result<u64, String> {
    for sequence in checkpoints.sequences().map_err(|e| e.to_string())? {
        if sequence < recovery.first_kept {
            tracing::warn!(
                "checkpoint {sequence} is older than the log's first record {}: not usable",
                recovery.first_kept
            );
            continue;
        }
        match checkpoints.read(sequence).map_err(|e| e.to_string())? {
            None => {
                tracing::error!("checkpoint {sequence} is damaged (checksum): trying an older one")
            }
            Some(body) => match backend.restore(&body) {
                Ok(()) => return Ok(sequence),
                Err(e) => tracing::error!(
                    "checkpoint {sequence} cannot be restored ({e}): trying an older one"
                ),
            },
        }
    }
    Ok(0)
}

impl<B: Backend> Applier<B> {
    fn recover(
        backend: B,
        config: ApplierConfig,
        metrics: Arc<Metrics>,
    ) -> Result<(Self, RecoveryReport), String> {
        let mut backend = backend;
        fairflow_store::private_dir(&config.data_dir).map_err(|e| e.to_string())?;
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
        report.checkpoint_sequence = restore_checkpoint(&mut backend, &checkpoints, &recovery)?;
        if recovery.first_kept > report.checkpoint_sequence {
            return Err(format!(
                "the log starts at record {} but no usable checkpoint covers the records before \
                 it: records are missing",
                recovery.first_kept
            ));
        }
        if log.next_sequence() < report.checkpoint_sequence {
            // The log lost records the checkpoint holds: go on after them, so
            // sequence numbers never go backwards.
            tracing::warn!(
                "the log ends at record {} but checkpoint {} covers more: continuing from {}",
                log.next_sequence(),
                report.checkpoint_sequence,
                report.checkpoint_sequence
            );
            log.skip_to(report.checkpoint_sequence)
                .map_err(|e| e.to_string())?;
        }
        let quarantine = Quarantine::new(&config.data_dir);
        let quarantined = quarantine.records()?;
        let suspects = quarantine.suspects()?;
        let skip = (report.checkpoint_sequence - recovery.first_kept) as usize;
        let mut replayer = Replayer {
            backend: &mut backend,
            quarantine: &quarantine,
            chunk: Vec::new(),
            chunk_range: 0..0,
            rejected: 0,
            keys: Keys::default(),
        };
        for (offset, record) in recovery.records.into_iter().enumerate() {
            let sequence = recovery.first_kept + offset as u64;
            if offset < skip {
                // Covered by the checkpoint: only its idempotency keys matter.
                if let Some(key) = std::str::from_utf8(&record).ok().and_then(parse_key_record) {
                    replayer.remember_key(sequence, key);
                }
                continue;
            }
            if quarantined.contains(&sequence) {
                tracing::error!(
                    "log record {sequence} is quarantined ({}): not applied",
                    config.data_dir.join("quarantine").display()
                );
                report.quarantined += 1;
                continue;
            }
            let text = String::from_utf8_lossy(&record).to_string();
            if suspects.iter().any(|range| range.contains(&sequence)) {
                replayer.alone(sequence, &record, &text)?;
            } else {
                replayer.push(sequence, &text)?;
            }
            report.replayed += 1;
        }
        replayer.flush()?;
        report.replay_rejected = replayer.rejected;
        let keys = std::mem::take(&mut replayer.keys);
        quarantine.clear_suspects()?;
        report.engine = backend.engine_name();
        let since_checkpoint = log
            .next_sequence()
            .saturating_sub(report.checkpoint_sequence);
        Ok((
            Applier {
                validator: backend.validator(),
                backend,
                log,
                checkpoints,
                quarantine,
                config,
                since_checkpoint,
                metrics,
                health: Arc::new(Health::default()),
                failed: None,
                keys,
            },
            report,
        ))
    }

    fn commit_group(&mut self, group: Vec<PendingWrite>) {
        if let Some(reason) = &self.failed {
            for (_, _, reply) in group {
                let _ = reply.send(Err(reason.clone()));
            }
            return;
        }
        // Only events the engine will accept are logged; a key already
        // applied is answered with its first outcome.
        let mut records: Vec<Vec<u8>> = Vec::new();
        let mut checked = Vec::with_capacity(group.len());
        let mut in_group = std::collections::BTreeSet::new();
        for (lines, key, reply) in group {
            if let Some(key) = &key {
                if let Some(first) = self.keys.get(key) {
                    let _ = reply.send(Ok(WriteOutcome {
                        duplicate: true,
                        ..first.clone()
                    }));
                    continue;
                }
                if !in_group.insert(key.clone()) {
                    let _ = reply.send(Err(
                        "a write with this Idempotency-Key is being applied: retry to get its \
                         outcome"
                            .to_string(),
                    ));
                    continue;
                }
                records.push(key_record(key));
            }
            let (admitted, rejected) = self.admit(lines, &mut records);
            checked.push((admitted, rejected, key, reply));
        }
        let started = Instant::now();
        let mut sequence = match self.log.append(&records) {
            Ok(first) => {
                self.health.set_degraded(None);
                first
            }
            Err(e) => {
                // The store rolled the append back: nothing of the group is
                // logged or applied, and the validator forgets it.
                self.validator = self.backend.validator();
                let reason = format!(
                    "the durable log cannot be written, nothing of this write was applied \
                     (retry later): {e}"
                );
                if self.log.is_damaged() {
                    let reason = format!(
                        "the durable log failed and could not be rolled back ({e}); part of \
                         this write may be applied after a restart"
                    );
                    self.failed = Some(reason.clone());
                    self.health.fail(reason.clone());
                    for (_, _, _, reply) in checked {
                        let _ = reply.send(Err(reason.clone()));
                    }
                    return;
                }
                tracing::warn!("{reason}");
                self.health.set_degraded(Some(reason.clone()));
                for (_, _, _, reply) in checked {
                    let _ = reply.send(Err(reason.clone()));
                }
                return;
            }
        };
        for (admitted, mut rejected, key, reply) in checked {
            // The key record comes first.
            sequence += u64::from(key.is_some());
            let count = admitted.len() as u64;
            if let Some(reason) = &self.failed {
                let _ = reply.send(Err(format!(
                    "{reason}; this write is logged and is applied when the service restarts"
                )));
                sequence += count;
                continue;
            }
            let engine_rejected = match apply_guarded(&mut self.backend, admitted) {
                Ok(engine_rejected) => engine_rejected,
                Err(panic) => {
                    let reason = self.engine_failed(sequence..sequence + count, &panic);
                    let _ = reply.send(Err(format!(
                        "{reason}; this write is logged: at restart every event of it but the \
                         one at fault is applied"
                    )));
                    sequence += count;
                    continue;
                }
            };
            let accepted = count - engine_rejected.len() as u64;
            rejected.extend(engine_rejected);
            rejected.sort_by_key(|r| r.line);
            self.metrics
                .record_batch(accepted, rejected.len() as u64, started.elapsed());
            let outcome = WriteOutcome {
                accepted,
                rejected: rejected.into_iter().map(RejectedLine::from).collect(),
                first_sequence: sequence,
                duplicate: false,
            };
            if let Some(key) = key {
                self.keys.insert(key, outcome.clone());
            }
            sequence += count;
            let _ = reply.send(Ok(outcome));
        }
        self.since_checkpoint += records.len() as u64;
        if self.since_checkpoint >= self.config.checkpoint_every && self.failed.is_none() {
            self.checkpoint();
        }
    }

    /// Split a write's lines into the events the validator accepts (their
    /// records appended to `records`) and the rejected lines.
    fn admit(
        &mut self,
        lines: Vec<LogLine>,
        records: &mut Vec<Vec<u8>>,
    ) -> (Vec<LogLine>, Vec<Rejection>) {
        let mut admitted = Vec::with_capacity(lines.len());
        let mut rejected = Vec::new();
        for LogLine { line, event } in lines {
            let verdict = event.and_then(|event| match &mut self.validator {
                Some(validator) => validator.check(line, &event).map(|()| event),
                None => Ok(event),
            });
            match verdict {
                Ok(event) => {
                    records.push(event_to_line(&event).into_bytes());
                    admitted.push(LogLine {
                        line,
                        event: Ok(event),
                    });
                }
                Err(rejection) => rejected.push(rejection),
            }
        }
        (admitted, rejected)
    }

    /// The engine panicked on the records `range`: mark them suspect, stop
    /// accepting anything and fail the service. Returns the reason.
    fn engine_failed(&mut self, range: std::ops::Range<u64>, panic: &str) -> String {
        let mut reason = format!(
            "the engine failed applying log records {}..{} ({panic}); the service stops",
            range.start, range.end
        );
        if let Err(e) = self.quarantine.mark_suspect(range, panic) {
            reason.push_str(&format!(" (and marking them suspect failed: {e})"));
        }
        self.failed = Some(reason.clone());
        self.health.fail(reason.clone());
        reason
    }

    fn checkpoint(&mut self) {
        let sequence = self.log.next_sequence();
        let body = self.backend.snapshot();
        // The log keeps the records from the oldest kept checkpoint on, so
        // each kept checkpoint can be the fallback.
        let written = self.checkpoints.write(sequence, &body).and_then(|()| {
            let oldest = self.checkpoints.oldest()?.unwrap_or(sequence);
            self.log.rotate(oldest)
        });
        match written {
            Ok(()) => {
                // The remembered idempotency keys are logged again after the
                // checkpoint, so they outlive the segments it lets go.
                let keys: Vec<Vec<u8>> = self.keys.names().map(key_record).collect();
                if let Err(e) = self.log.append(&keys) {
                    tracing::warn!("re-logging idempotency keys failed: {e}");
                }
                self.since_checkpoint = 0;
                self.metrics.checkpoints.inc();
            }
            Err(e) => tracing::warn!(
                "checkpoint at {sequence} failed (the log still holds everything): {e}"
            ),
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
            let mut group = Vec::new();
            for command in pending {
                match command {
                    Command::Write {
                        lines,
                        key,
                        ticket,
                        reply,
                    } => {
                        // A write its writer abandoned (timed out) is never applied.
                        if ticket.is_none_or(|t| t.take()) {
                            group.push((lines, key, reply));
                        }
                    }
                    other => {
                        // Reads see every write that arrived before them.
                        if !group.is_empty() {
                            self.commit_group(std::mem::take(&mut group));
                        }
                        self.answer(other);
                    }
                }
            }
            if !group.is_empty() {
                self.commit_group(group);
            }
        }
        // Shutting down: leave a checkpoint so the next start is quick.
        if self.since_checkpoint > 0 && self.failed.is_none() {
            self.checkpoint();
        }
    }

    fn answer(&mut self, command: Command) {
        match command {
            Command::Read { reply, .. } if self.failed.is_some() => {
                let reason = self.failed.clone().unwrap_or_default();
                let _ = reply.send(Err(QueryError::Internal(reason)));
            }
            Command::Read { query, reply } => {
                let answer = catch_unwind(AssertUnwindSafe(|| self.backend.query(&query)));
                let answer = answer.unwrap_or_else(|panic| {
                    let reason = format!(
                        "the engine failed answering a read ({}); the service stops",
                        panic_message(panic)
                    );
                    self.failed = Some(reason.clone());
                    self.health.fail(reason.clone());
                    Err(QueryError::Internal(reason))
                });
                let _ = reply.send(answer);
            }
            Command::Gauges { reply } => {
                // A failed engine has no gauges: `/healthz` reads that as stopped.
                if self.failed.is_none() {
                    if let Ok(gauges) = catch_unwind(AssertUnwindSafe(|| self.backend.gauges())) {
                        let _ = reply.send(gauges);
                    }
                }
            }
            Command::Write { .. } => unreachable!("writes are grouped"),
        }
    }
}

/// Recover the state from `config.data_dir` and start the applier thread.
/// Returns the handle, the recovery report and the thread (which ends when
/// every handle is dropped, after a final checkpoint).
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
        .spawn(move || applier.run(receiver))
        .map_err(|e| format!("cannot start the applier thread: {e}"))?;
    Ok((ApplierHandle { sender, health }, report, thread))
}
