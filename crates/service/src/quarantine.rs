//! Quarantine of log records the engine fails on, so that one bad record never
//! makes a data directory unservable (a crash loop on replay).
//!
//! The applier logs only events the engine has already applied (`applier`),
//! so a record the engine fails on can only come from a log written before
//! that (or by a bug that made the engine non-deterministic). Replay isolates
//! it (`applier::replay`) and quarantines it here: its bytes go to
//! `DATA_DIR/quarantine/record-<sequence>.jsonl` followed by a `#` line with
//! the reason, an error naming the log segment and the sequence is logged, and
//! every later replay skips that sequence (sequence numbers never go
//! backwards, so it names that record for good). The record stays in the log
//! segment until a checkpoint covers it. An operator can inspect it and submit
//! a corrected event.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The quarantine directory of a data directory.
#[derive(Debug, Clone)]
pub struct Quarantine {
    dir: PathBuf,
}

/// Why the quarantine cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum QuarantineError {
    /// Its directory cannot be made private.
    #[error(transparent)]
    Store(#[from] fairflow_store::StoreError),
    /// A file or the directory cannot be read or written.
    #[error("{action} {}: {source}", .path.display())]
    Io {
        /// `reading`, `writing`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> QuarantineError {
    let path = path.to_path_buf();
    move |source| QuarantineError::Io {
        action,
        path,
        source,
    }
}

impl Quarantine {
    /// The quarantine of `data_dir` (`data_dir/quarantine`).
    pub fn new(data_dir: &Path) -> Self {
        Quarantine {
            dir: data_dir.join("quarantine"),
        }
    }

    /// The directory the quarantined records are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sequence numbers of quarantined records.
    pub fn records(&self) -> Result<BTreeSet<u64>, QuarantineError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
            Err(e) => return Err(io("reading", &self.dir)(e)),
            Ok(entries) => entries,
        };
        Ok(entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .strip_prefix("record-")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()
            })
            .collect())
    }

    /// Quarantine the record `sequence` (its bytes, then a `#` line with the
    /// reason); returns the file written.
    pub fn quarantine(
        &self,
        sequence: u64,
        record: &[u8],
        reason: &str,
    ) -> Result<PathBuf, QuarantineError> {
        fairflow_store::private_dir(&self.dir)?;
        let path = self.dir.join(format!("record-{sequence}.jsonl"));
        let mut body = record.to_vec();
        body.extend_from_slice(format!("\n# {}\n", reason.replace('\n', " ")).as_bytes());
        std::fs::write(&path, body).map_err(io("writing", &path))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantined_records_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let q = Quarantine::new(dir.path());
        assert!(q.records().unwrap().is_empty());
        let path = q
            .quarantine(5, b"{\"op\":\"tick\",\"t\":1}", "boom")
            .unwrap();
        let q = Quarantine::new(dir.path());
        assert_eq!(q.records().unwrap(), BTreeSet::from([5]));
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text, "{\"op\":\"tick\",\"t\":1}\n# boom\n");
    }
}
