//! Quarantine of log records the engine could not apply, so that one bad
//! record never makes a data directory unservable (a crash loop on replay).
//!
//! Records are checked by the validator before they are logged, so an engine
//! failure on a logged record is a bug; it is still survived:
//! 1. when applying the records `a..b` panics (live, or while replaying the log
//!    at recovery), the range is marked **suspect** (`quarantine/suspect-a-b`)
//!    and the service stops with an error;
//! 2. at the next recovery, the records of a suspect range are applied one at a
//!    time; the one that fails is **quarantined**: its bytes are written to
//!    `quarantine/record-<sequence>.jsonl` with a loud message, and the service
//!    stops again;
//! 3. every later recovery skips quarantined records, saying so on every start.
//!
//! An operator can inspect the record, and re-submit a corrected event.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The quarantine directory of a data directory.
#[derive(Debug, Clone)]
pub struct Quarantine {
    dir: PathBuf,
}

fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> String {
    let context = format!("{what} {}", path.display());
    move |e| format!("{context}: {e}")
}

impl Quarantine {
    /// The quarantine of `data_dir` (`data_dir/quarantine`).
    pub fn new(data_dir: &Path) -> Self {
        Quarantine {
            dir: data_dir.join("quarantine"),
        }
    }

    fn names(&self) -> Result<Vec<String>, String> {
        match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io("reading", &self.dir)(e)),
            Ok(entries) => Ok(entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()),
        }
    }

    fn write(&self, name: &str, body: &[u8]) -> Result<PathBuf, String> {
        fairflow_store::private_dir(&self.dir).map_err(|e| e.to_string())?;
        let path = self.dir.join(name);
        std::fs::write(&path, body).map_err(io("writing", &path))?;
        Ok(path)
    }

    /// The sequence numbers of quarantined records.
    pub fn records(&self) -> Result<BTreeSet<u64>, String> {
        Ok(self
            .names()?
            .iter()
            .filter_map(|n| {
                n.strip_prefix("record-")?
                    .strip_suffix(".jsonl")?
                    .parse()
                    .ok()
            })
            .collect())
    }

    /// The suspect ranges of sequence numbers.
    pub fn suspects(&self) -> Result<Vec<Range<u64>>, String> {
        Ok(self
            .names()?
            .iter()
            .filter_map(|n| {
                let (a, b) = n.strip_prefix("suspect-")?.split_once('-')?;
                Some(a.parse().ok()?..b.parse().ok()?)
            })
            .collect())
    }

    /// Mark `range` suspect: applying it failed with `reason`.
    pub fn mark_suspect(&self, range: Range<u64>, reason: &str) -> Result<(), String> {
        self.write(
            &format!("suspect-{}-{}", range.start, range.end),
            reason.as_bytes(),
        )
        .map(|_| ())
    }

    /// Forget every suspect range (each was resolved).
    pub fn clear_suspects(&self) -> Result<(), String> {
        for range in self.suspects()? {
            let path = self
                .dir
                .join(format!("suspect-{}-{}", range.start, range.end));
            std::fs::remove_file(&path).map_err(io("removing", &path))?;
        }
        Ok(())
    }

    /// Quarantine the record `sequence` (its bytes, then a `#` line with the
    /// reason); returns the file written.
    pub fn quarantine(
        &self,
        sequence: u64,
        record: &[u8],
        reason: &str,
    ) -> Result<PathBuf, String> {
        let mut body = record.to_vec();
        body.extend_from_slice(format!("\n# {}\n", reason.replace('\n', " ")).as_bytes());
        self.write(&format!("record-{sequence}.jsonl"), &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suspects_and_records_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let q = Quarantine::new(dir.path());
        assert!(q.suspects().unwrap().is_empty());
        assert!(q.records().unwrap().is_empty());
        q.mark_suspect(3..7, "boom").unwrap();
        let q = Quarantine::new(dir.path());
        assert_eq!(q.suspects().unwrap(), vec![3..7]);
        let path = q
            .quarantine(5, b"{\"op\":\"tick\",\"t\":1}", "boom")
            .unwrap();
        q.clear_suspects().unwrap();
        assert!(q.suspects().unwrap().is_empty());
        assert_eq!(q.records().unwrap(), BTreeSet::from([5]));
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text, "{\"op\":\"tick\",\"t\":1}\n# boom\n");
    }
}
