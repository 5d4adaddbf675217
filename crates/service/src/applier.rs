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
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{parse_event, LogLine, Rejection};
use fairflow_store::{Checkpoints, EventLog, OpenMode};
use tokio::sync::{mpsc, oneshot};

use crate::backend::{Backend, BackendError, QueryError, QueryErrorKind};
use crate::budget::WriteBudget;
use crate::exactly_once::{key_record, Keys};
use crate::health::Health;
use crate::log_limit::LogLimit;
use crate::metrics::Metrics;
use crate::quarantine::Quarantine;
use crate::taps::cursor::{TapCursor, TapCursors};
pub use crate::write_outcome::{RejectedLine, WriteOutcome};

mod handle;
mod recovery;

use handle::shutting_down;
pub use handle::{
    parse_body, tally, ApplierConfig, ApplierHandle, Command, RecoveryReport, WriteError,
};
pub use recovery::RecoveryError;
use recovery::{bring_up, guarded, panic_message, PROBE_RECORD};

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
    ) -> Result<(Self, RecoveryReport), RecoveryError> {
        let mut backend = backend;
        fairflow_store::private_dir(&config.data_dir)?;
        let initial = guarded(|| backend.snapshot()).map_err(RecoveryError::EmptyState)?;
        let checkpoints = Checkpoints::new(config.data_dir.join("checkpoints"));
        let mode = if config.recover {
            OpenMode::Recover
        } else {
            OpenMode::Strict
        };
        let (mut log, recovery) = EventLog::open_with(config.data_dir.join("log"), mode)
            .map_err(RecoveryError::OpenLog)?;
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
            .map_err(RecoveryError::Store)
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
    ) -> Result<
        AppliedWrite,
        (
            BackendError,
            oneshot::Sender<Result<WriteOutcome, WriteError>>,
        ),
    > {
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
        let (engine_rejected, own) = match guarded(|| {
            if lines.is_empty() {
                Ok((Vec::new(), Vec::new()))
            } else {
                backend.apply_logging_own(lines)
            }
        }) {
            Ok(applied) => applied,
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
        // The backend's own events (a history step's tick) go just before
        // the line they were applied before, accepted or not.
        let mut own = own.into_iter().peekable();
        for (line, text) in texts {
            while let Some((_, event)) = own.next_if(|(before, _)| *before == line) {
                records.push(event_to_line(&event).into_bytes());
            }
            if !refused.contains(&line) {
                records.push(text);
            }
        }
        records.extend(own.map(|(_, event)| event_to_line(&event).into_bytes()));
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
                    .unwrap_or_else(|panic| Err(QueryError::Panicked(panic_message(panic))));
                if let Err(failure) = &answer {
                    if failure.kind() == QueryErrorKind::Internal {
                        self.rebuild(&format!("the engine failed answering a read ({failure})"));
                    }
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
) -> Result<(ApplierHandle, RecoveryReport, std::thread::JoinHandle<()>), RecoveryError> {
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
        .map_err(RecoveryError::Thread)?;
    let handle = ApplierHandle {
        sender,
        health,
        budget: WriteBudget::default(),
        lead: None,
    };
    Ok((handle, report, thread))
}
