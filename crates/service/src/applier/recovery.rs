//! Recovery: bring an engine to the durable state (`bring_up`: the newest
//! usable checkpoint, then the log after it) by replaying the log in chunks
//! (`replay`), isolating and quarantining a record the engine fails on; and
//! `guarded`, which turns an engine call's panic into an error.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use fairflow_ingest::{parse_event, LogLine};
use fairflow_store::{Checkpoints, EventLog, Recovery};

use super::WriteOutcome;
use crate::backend::{Backend, BackendError};
use crate::exactly_once::{parse_key_record, Keys};
use crate::quarantine::{Quarantine, QuarantineError};
use crate::taps::cursor::{TapCursor, TapCursors};

/// The text of a panic's payload.
pub(super) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Run an engine call, turning a panic into an error. Unwind safety is
/// asserted because an engine that failed is never used again as it is: it
/// is rebuilt from the durable state (module documentation).
pub(super) fn guarded<T>(
    call: impl FnOnce() -> Result<T, BackendError>,
) -> Result<T, BackendError> {
    catch_unwind(AssertUnwindSafe(call))
        .unwrap_or_else(|panic| Err(BackendError::Panicked(panic_message(panic))))
}

/// The record a commit group is preceded by while the log is failing: it
/// tells whether the disk takes writes again, and replay skips it.
pub(super) const PROBE_RECORD: &[u8] = b"#probe";

/// Log records replayed together.
const REPLAY_CHUNK: usize = 10_000;

/// What a replay did.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    pub(super) replayed: u64,
    pub(super) rejected: u64,
    pub(super) skipped_quarantined: u64,
    pub(super) newly_quarantined: Vec<String>,
    pub(super) keys: Keys,
    pub(super) cursors: TapCursors,
}

/// Why a replay stopped.
enum ReplayError {
    /// The base state could not be restored (try an older checkpoint).
    Base(BackendError),
    /// The quarantine cannot be read or written.
    Quarantine(QuarantineError),
}

/// Why the applier cannot bring its engine to the durable state, or start.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The data directory, the checkpoints or the log failed.
    #[error(transparent)]
    Store(#[from] fairflow_store::StoreError),
    /// The durable log cannot be opened at start.
    #[error("the durable log cannot be opened: {0}")]
    OpenLog(fairflow_store::StoreError),
    /// The engine cannot write its empty state (the base of a replay
    /// without a checkpoint).
    #[error("the engine cannot write its empty state: {0}")]
    EmptyState(BackendError),
    /// The engine cannot restore the empty state.
    #[error(transparent)]
    Restore(BackendError),
    /// The quarantine cannot be read or written.
    #[error(transparent)]
    Quarantine(#[from] QuarantineError),
    /// Records before the log's first are in no usable checkpoint.
    #[error(
        "the log starts at record {first_kept} but no usable checkpoint covers the records \
         before it: records are missing"
    )]
    MissingRecords {
        /// The log's first record.
        first_kept: u64,
    },
    /// The applier's thread cannot start.
    #[error("cannot start the applier thread: {0}")]
    Thread(std::io::Error),
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

/// Note a record that is not an event in `done`: an idempotency key, a
/// tap's cursor, or a probe (which says nothing).
fn note_marker(done: &mut Replayed, sequence: u64, record: &[u8]) {
    let text = std::str::from_utf8(record).ok();
    if let Some(key) = text.and_then(parse_key_record) {
        remember_key(&mut done.keys, sequence, key);
    } else if let Some(cursor) = text.and_then(TapCursor::parse) {
        done.cursors.insert(cursor.tap, cursor.position);
    }
}

/// Quarantine log record `sequence`, which the engine fails on alone with
/// `reason`; the loud message saying so, logged and returned.
fn quarantine_record(
    quarantine: &Quarantine,
    log: &EventLog,
    sequence: u64,
    record: &[u8],
    reason: &BackendError,
) -> Result<String, ReplayError> {
    let segment = log
        .segment_of(sequence)
        .map_or_else(|| "the log".to_string(), |p| p.display().to_string());
    let path = quarantine
        .quarantine(sequence, record, &reason.to_string())
        .map_err(ReplayError::Quarantine)?;
    let message = format!(
        "QUARANTINED: log record {sequence} in {segment} makes the engine fail \
         ({reason}); it is not applied, now or at any later start; its copy \
         is {}",
        path.display()
    );
    tracing::error!("{message}");
    Ok(message)
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
    let mut quarantined = quarantine.records().map_err(ReplayError::Quarantine)?;
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
                note_marker(&mut done, sequence, record);
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
                        let message =
                            quarantine_record(quarantine, log, sequence, record, &reason)?;
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
pub(super) fn bring_up<B: Backend>(
    backend: &mut B,
    initial: &[u8],
    checkpoints: &Checkpoints,
    quarantine: &Quarantine,
    log: &mut EventLog,
    recovery: &Recovery,
) -> Result<(u64, Replayed), RecoveryError> {
    let mut candidates = Vec::new();
    for sequence in checkpoints.sequences()? {
        if sequence < recovery.first_kept {
            tracing::warn!(
                "checkpoint {sequence} is older than the log's first record {}: not usable",
                recovery.first_kept
            );
            continue;
        }
        match checkpoints.read(sequence)? {
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
                    log.skip_to(sequence)?;
                }
                return Ok((sequence, done));
            }
            Err(ReplayError::Base(e)) => {
                tracing::error!(
                    "checkpoint {sequence} cannot be restored ({e}): trying an older one"
                )
            }
            Err(ReplayError::Quarantine(e)) => return Err(e.into()),
        }
    }
    if recovery.first_kept > 0 {
        return Err(RecoveryError::MissingRecords {
            first_kept: recovery.first_kept,
        });
    }
    match replay(backend, initial, &recovery.records, 0, 0, quarantine, log) {
        Ok(done) => Ok((0, done)),
        Err(ReplayError::Base(e)) => Err(RecoveryError::Restore(e)),
        Err(ReplayError::Quarantine(e)) => Err(e.into()),
    }
}
