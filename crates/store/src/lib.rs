//! Durability for the live service: an append-only log of accepted events in
//! segment files, every record framed with its length and CRC-32 and synced to
//! disk before it is acknowledged, and atomically written checkpoints (several
//! kept, each checksummed). On open, a torn tail (a crash mid-write) is cut,
//! never applied; damage anywhere else stops the open naming file and offset
//! (or, asked to recover, is set aside and reported).
//!
//! **Architecture invariant:** a record is acknowledged only after
//! [`EventLog::append`] returned, and `append` returns only after the data is
//! on disk (`sync_data`). Records are opaque bytes here: the log knows nothing
//! of events.

#![warn(missing_docs)]

pub mod checkpoint;
pub mod wal;

pub use checkpoint::Checkpoints;
pub use wal::{Dropped, EventLog, OpenMode, Recovery};

/// Errors of the durable store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The log is damaged somewhere other than a torn tail.
    #[error("{path}: damaged at byte offset {offset}: {reason}")]
    Corrupt {
        /// The segment.
        path: String,
        /// The offset of the damaged frame.
        offset: u64,
        /// What was found.
        reason: String,
    },
    /// A failed append could not be rolled back: the segment may end with
    /// part of a refused write, and nothing more is appended to it.
    #[error("{path}: a failed append could not be rolled back; restart the service")]
    Damaged {
        /// The segment.
        path: String,
    },
    /// An empty record (the log's framing reserves it for zero-filled space).
    #[error("an empty record cannot be logged")]
    EmptyRecord,
    /// A record is larger than the log accepts.
    #[error("a record of {len} bytes is larger than the limit of {limit} bytes")]
    RecordTooLarge {
        /// The record's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

/// The crate's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn io_error(
    what: &'static str,
    path: &std::path::Path,
) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io { what, path, source }
}

/// The files of `dir` named `{prefix}{N}{suffix}`, as `(N, path)` in order of
/// `N`. A missing `dir` is an error, or no files when `missing_dir_is_empty`.
pub(crate) fn numbered_files(
    dir: &std::path::Path,
    prefix: &str,
    suffix: &str,
    missing_dir_is_empty: bool,
) -> Result<Vec<(u64, std::path::PathBuf)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if missing_dir_is_empty && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new())
        }
        Err(e) => return Err(io_error("reading", dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("reading", dir))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some(number) = name
            .strip_prefix(prefix)
            .and_then(|n| n.strip_suffix(suffix))
            .and_then(|n| n.parse::<u64>().ok())
        {
            found.push((number, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Create `dir` (and its parents) if needed and make it private to its owner
/// (mode 0700 on Unix): the log and checkpoints hold every event.
pub fn private_dir(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io_error("creating", dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_error("setting the permissions of", dir))?;
    }
    Ok(())
}

/// Options creating files private to their owner (mode 0600 on Unix).
pub(crate) fn private_file() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}
