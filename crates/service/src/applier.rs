//! The applier: the one thread that owns the engine, the durable event log and
//! the checkpoints. Writers' batches arrive on a bounded channel (a full
//! channel slows writers down; nothing is dropped). Batches waiting together
//! are committed together: one append and one `fsync` for all of them, then
//! each is applied in order and answered. An event is acknowledged only after
//! its record is on disk. Every `checkpoint_every` records a checkpoint is
//! written and the log segments it covers are dropped.
//!
//! Recovery (`start`): the newest valid checkpoint is restored, then every
//! logged record after it is applied again, in order. Records are canonical
//! event lines, so a record that was rejected when first applied is rejected
//! again identically: the state after recovery is exactly the state after the
//! acknowledged (and any durable but unacknowledged) events.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{parse_event, LogLine, Rejection};
use fairflow_store::{Checkpoints, EventLog};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, Gauges, Query, QueryError};
use crate::log_limit::LogLimit;
use crate::metrics::Metrics;

/// The answer to a write.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WriteOutcome {
    /// Events applied.
    pub accepted: u64,
    /// Lines rejected, with line numbers relative to the batch.
    pub rejected: Vec<RejectedLine>,
    /// The log sequence number of the batch's first record.
    pub first_sequence: u64,
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
    /// The engine serving after recovery ([`Backend::engine_name`]).
    pub engine: &'static str,
}

/// The handle writers and readers use.
#[derive(Clone)]
pub struct ApplierHandle {
    sender: mpsc::Sender<Command>,
}

impl ApplierHandle {
    /// Submit a batch; waits (without dropping) while the queue is full.
    pub async fn write(&self, lines: Vec<LogLine>) -> Result<WriteOutcome, String> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Command::Write { lines, reply })
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

/// A write waiting in a commit group, with where its answer goes.
type PendingWrite = (Vec<LogLine>, oneshot::Sender<Result<WriteOutcome, String>>);

struct Applier<B: Backend> {
    backend: B,
    log: EventLog,
    checkpoints: Checkpoints,
    config: ApplierConfig,
    since_checkpoint: u64,
    metrics: Arc<Metrics>,
    failed: Option<String>,
    reject_log: LogLimit,
}

impl<B: Backend> Applier<B> {
    fn recover(
        backend: B,
        config: ApplierConfig,
        metrics: Arc<Metrics>,
    ) -> Result<(Self, RecoveryReport), String> {
        let mut backend = backend;
        let checkpoints = Checkpoints::new(config.data_dir.join("checkpoints"));
        let (log, recovery) =
            EventLog::open(config.data_dir.join("log")).map_err(|e| e.to_string())?;
        let mut report = RecoveryReport {
            truncated_bytes: recovery.truncated_bytes,
            ..RecoveryReport::default()
        };
        if let Some((sequence, body)) = checkpoints.latest().map_err(|e| e.to_string())? {
            backend
                .restore(&body)
                .map_err(|e| format!("restoring checkpoint {sequence}: {e}"))?;
            report.checkpoint_sequence = sequence;
        }
        if recovery.first_kept > report.checkpoint_sequence {
            return Err(format!(
                "the log starts at record {} but the checkpoint covers only {}: records are missing",
                recovery.first_kept, report.checkpoint_sequence
            ));
        }
        let skip = (report.checkpoint_sequence - recovery.first_kept) as usize;
        let progress = crate::progress::bar(
            recovery.records.len().saturating_sub(skip) as u64,
            "records",
            "recovering the log",
            100_000,
        );
        let mut chunk = Vec::new();
        for (offset, record) in recovery.records.into_iter().enumerate().skip(skip) {
            let sequence = recovery.first_kept + offset as u64;
            let text = String::from_utf8_lossy(&record).to_string();
            chunk.push(LogLine {
                line: sequence + 1,
                event: parse_event(sequence + 1, &text),
            });
            if chunk.len() == 10_000 {
                report.replay_rejected += backend.apply(std::mem::take(&mut chunk)).len() as u64;
                progress.inc(10_000);
            }
            report.replayed += 1;
        }
        report.replay_rejected += backend.apply(chunk).len() as u64;
        progress.finish_and_clear();
        report.engine = backend.engine_name();
        let since_checkpoint = log.next_sequence() - report.checkpoint_sequence;
        Ok((
            Applier {
                backend,
                log,
                checkpoints,
                config,
                since_checkpoint,
                metrics,
                failed: None,
                reject_log: LogLimit::new(20, Duration::from_secs(10)),
            },
            report,
        ))
    }

    fn commit_group(&mut self, group: Vec<PendingWrite>) {
        if let Some(reason) = &self.failed {
            for (_, reply) in group {
                let _ = reply.send(Err(reason.clone()));
            }
            return;
        }
        let records: Vec<Vec<u8>> = group
            .iter()
            .flat_map(|(lines, _)| lines.iter().filter_map(|l| l.event.as_ref().ok()))
            .map(|event| event_to_line(event).into_bytes())
            .collect();
        let started = Instant::now();
        let mut first_sequence = match self.log.append(&records) {
            Ok(first) => first,
            Err(e) => {
                // Fail-stop: nothing more is acknowledged once the disk failed.
                let reason = format!("the durable log failed: {e}");
                self.failed = Some(reason.clone());
                for (_, reply) in group {
                    let _ = reply.send(Err(reason.clone()));
                }
                return;
            }
        };
        for (lines, reply) in group {
            let parsed = lines.iter().filter(|l| l.event.is_ok()).count() as u64;
            let unparsed: Vec<Rejection> = lines
                .iter()
                .filter_map(|l| l.event.as_ref().err().cloned())
                .collect();
            let backend_rejected = self.backend.apply(lines);
            let (accepted, rejected) = tally(parsed, unparsed, backend_rejected);
            self.log_rejected(&rejected);
            self.metrics
                .record_batch(accepted, rejected.len() as u64, started.elapsed());
            let outcome = WriteOutcome {
                accepted,
                rejected: rejected.into_iter().map(RejectedLine::from).collect(),
                first_sequence,
            };
            first_sequence += parsed;
            let _ = reply.send(Ok(outcome));
        }
        self.since_checkpoint += records.len() as u64;
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
        let body = self.backend.snapshot();
        match self
            .checkpoints
            .write(sequence, &body)
            .and_then(|_| self.log.rotate(sequence))
        {
            Ok(()) => {
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
                    Command::Write { lines, reply } => group.push((lines, reply)),
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
            tracing::info!(
                "final checkpoint written at record {}",
                self.log.next_sequence()
            );
        }
    }

    fn answer(&mut self, command: Command) {
        match command {
            Command::Read { query, reply } => {
                let _ = reply.send(self.backend.query(&query));
            }
            Command::Gauges { reply } => {
                let _ = reply.send(self.backend.gauges());
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
    let (sender, receiver) = mpsc::channel(config.queue_capacity.max(1));
    let thread = std::thread::Builder::new()
        .name("fairflow-applier".into())
        .spawn(move || applier.run(receiver))
        .map_err(|e| format!("cannot start the applier thread: {e}"))?;
    Ok((ApplierHandle { sender }, report, thread))
}
