//! Durability for the live service: an append-only log of accepted events in
//! segment files, every record framed with its length and CRC-32 and synced to
//! disk before it is acknowledged, and atomically written checkpoints. On
//! open, a torn or corrupt tail (a crash mid-write) is detected by its frame
//! and cut, never applied.
//!
//! **Architecture invariant:** a record is acknowledged only after
//! [`EventLog::append`] returned, and `append` returns only after the data is
//! on disk (`sync_data`). Records are opaque bytes here: the log knows nothing
//! of events.

#![warn(missing_docs)]

pub mod checkpoint;
pub mod wal;

pub use checkpoint::Checkpoints;
pub use wal::{EventLog, Recovery};

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
