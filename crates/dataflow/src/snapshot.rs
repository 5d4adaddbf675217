//! Snapshots of the incremental engine: the driver's books as bytes, so that
//! the live service can checkpoint an engine and restart from it.
//!
//! # What is kept
//! Only the books; nothing of the dataflow itself. A snapshot holds the
//! validator's catalog, the [`Ledger`] (interned associations, settled usage
//! in frame units, running jobs, the decay frame, the next reset), the
//! [`JobLedger`]'s book (an oracle `State`), the count of applied events and
//! Slurm's `INCR_ONLY` memory, which lives with worker 0's priority reader.
//! What was sent to the dataflow (`sent_*`), the crossings and the dirty sets
//! are not kept: they describe one running dataflow, not the state.
//!
//! # Restoring
//! [`crate::Engine::restore`] decodes the books, makes them take over what the
//! running dataflow was fed (`Ledger::resend_replacing`,
//! `JobLedger::resend_replacing`: the old records are retracted and every
//! record of the books is sent, as ONE batch, like an initial load), and
//! flushes. The dataflow's epoch counter simply goes on; the results are
//! those of the engine that took the snapshot, whatever the worker count of
//! either.
//!
//! # Format
//! `MAGIC` (8 bytes), the format version (`u32` little-endian), the CRC-32
//! of the body (`u32` little-endian), then the body: the books in `postcard`.
//! A foreign or damaged snapshot is a [`SnapshotError`], never a panic: the
//! magic and version are checked, then the checksum, then the decoding, then
//! the books' consistency (every id they name exists, the tree has no cycle,
//! the three books know the same jobs and associations).
//!
//! [`oracle_replay`] reads the same snapshot as an oracle `Replay` (the
//! validator and the job book are exactly the validator and state the oracle
//! keeps after the same events), so a checkpoint taken on the incremental
//! engine can be restored by the batch engine.

use fairflow_ingest::Validator;
use fairflow_oracle::{Replay, ReplayReport};

use crate::job_ledger::JobLedger;
use crate::ledger::Ledger;
use crate::priority::IncrFloors;

/// The first bytes of every engine snapshot.
pub const MAGIC: &[u8; 8] = b"FFLOWENG";

/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

const HEADER_BYTES: usize = MAGIC.len() + 4 + 4;

/// Why bytes are not a snapshot this engine can restore.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// The bytes do not start with the engine snapshot's magic.
    #[error("not a fairflow incremental-engine snapshot (no `FFLOWENG` header)")]
    Foreign,
    /// Written by another version of the format.
    #[error("incremental-engine snapshot format version {found} is not supported (this build reads version {VERSION})")]
    Version {
        /// The version found.
        found: u32,
    },
    /// The header is right but the content is damaged.
    #[error("damaged incremental-engine snapshot: {0}")]
    Corrupt(String),
}

/// What a snapshot holds, borrowed for writing.
#[derive(serde::Serialize)]
struct BooksRef<'a> {
    validator: &'a Validator,
    ledger: &'a Ledger,
    jobs: &'a JobLedger,
    applied: u64,
    floors: &'a IncrFloors,
}

/// What a snapshot holds.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Books {
    pub(crate) validator: Validator,
    pub(crate) ledger: Ledger,
    pub(crate) jobs: JobLedger,
    pub(crate) applied: u64,
    pub(crate) floors: IncrFloors,
}

/// The books as a snapshot (header, checksum, body).
pub(crate) fn encode(
    validator: &Validator,
    ledger: &Ledger,
    jobs: &JobLedger,
    applied: u64,
    floors: &IncrFloors,
) -> Vec<u8> {
    let body = postcard::to_stdvec(&BooksRef {
        validator,
        ledger,
        jobs,
        applied,
        floors,
    })
    .expect("the books are always serialisable");
    let mut bytes = Vec::with_capacity(HEADER_BYTES + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// Is this an engine snapshot (of any version)? Only the magic is checked.
pub fn is_engine_snapshot(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The books of a snapshot, checked.
pub(crate) fn decode(bytes: &[u8]) -> Result<Books, SnapshotError> {
    if !is_engine_snapshot(bytes) {
        return Err(SnapshotError::Foreign);
    }
    if bytes.len() < HEADER_BYTES {
        return Err(SnapshotError::Corrupt(format!(
            "{} bytes is shorter than the {HEADER_BYTES}-byte header",
            bytes.len()
        )));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let version = word(MAGIC.len());
    if version != VERSION {
        return Err(SnapshotError::Version { found: version });
    }
    let checksum = word(MAGIC.len() + 4);
    let body = &bytes[HEADER_BYTES..];
    if crc32fast::hash(body) != checksum {
        return Err(SnapshotError::Corrupt(
            "the checksum does not match the content".into(),
        ));
    }
    let books: Books = postcard::from_bytes(body)
        .map_err(|e| SnapshotError::Corrupt(format!("cannot decode the books: {e}")))?;
    check(&books).map_err(SnapshotError::Corrupt)?;
    Ok(books)
}

/// The three books describe one cluster: every id is known, and they agree
/// on the jobs and associations that exist.
fn check(books: &Books) -> Result<(), String> {
    books.ledger.check_consistent()?;
    let state = books.jobs.state();
    let ledger = &books.ledger;
    if !ledger.accounts().keys().eq(state.accounts.keys()) {
        return Err("the ledger and the job book list different accounts".into());
    }
    if !ledger.users().keys().eq(state.users.keys()) {
        return Err("the ledger and the job book list different user associations".into());
    }
    if !ledger.job_ids().eq(state.jobs.keys()) {
        return Err("the ledger and the job book list different jobs".into());
    }
    for name in state.accounts.keys() {
        if !books.validator.has_account(name) {
            return Err(format!("the validator does not know account {name}"));
        }
    }
    for job in state.jobs.keys() {
        if books.validator.job_phase(job).is_none() {
            return Err(format!("the validator does not know job {job}"));
        }
    }
    Ok(())
}

/// A snapshot of the incremental engine read as the oracle's `Replay`
/// after the same events (the batch engine's restore of an incremental
/// checkpoint): the validator, the job book's state with the `INCR_ONLY`
/// floors of the jobs' current stays, and the applied count (the rejected
/// lines' history is not kept).
pub fn oracle_replay(bytes: &[u8]) -> Result<Replay, SnapshotError> {
    let books = decode(bytes)?;
    let mut state = books.jobs.state().clone();
    state.priority_floor = books
        .floors
        .iter()
        .filter(|(job, (stay, _))| {
            state
                .jobs
                .get(*job)
                .is_some_and(|j| (j.submit_at, j.start_count) == *stay)
        })
        .map(|(job, (_, floor))| (job.clone(), *floor))
        .collect();
    Ok(Replay {
        validator: books.validator,
        state,
        report: ReplayReport {
            applied: books.applied,
            rejected: Vec::new(),
        },
    })
}
