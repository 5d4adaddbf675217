//! Checkpoints: opaque state snapshots tagged with the log sequence they cover
//! (`checkpoint-<sequence>.bin`), written to a temporary file, synced and
//! renamed into place, so a crash leaves either the old checkpoint or the new
//! one, never a half-written one. Each file carries a CRC-32 of its body. The
//! newest [`KEEP`] are kept, so a damaged newest one (or one its reader
//! refuses) falls back to the one before; the log keeps the records from the
//! oldest kept checkpoint on (`oldest`). A failed write leaves no temporary
//! file, and temporary files a crash left are removed when the directory is
//! opened.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{io_error, numbered_files, Result};

/// The checkpoints of a data directory.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
}

/// How many checkpoints are kept.
pub const KEEP: usize = 3;

fn name(sequence: u64) -> String {
    format!("checkpoint-{sequence:020}.bin")
}

impl Checkpoints {
    /// The checkpoints kept in `dir`. Temporary files a crash left behind are
    /// removed (best effort: a directory that cannot be read is reported later).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        let checkpoints = Checkpoints {
            dir: dir.as_ref().to_path_buf(),
        };
        if let Ok(entries) = std::fs::read_dir(&checkpoints.dir) {
            for entry in entries.filter_map(std::result::Result::ok) {
                if entry.file_name().to_string_lossy().ends_with(".tmp") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        checkpoints
    }

    /// Write a checkpoint covering the log's records before `sequence`, then
    /// remove all but the newest [`KEEP`]. On failure nothing is left behind.
    pub fn write(&self, sequence: u64, body: &[u8]) -> Result<()> {
        crate::private_dir(&self.dir)?;
        let path = self.dir.join(name(sequence));
        let temporary = self.dir.join(format!("{}.tmp", name(sequence)));
        let written = crate::private_file()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)
            .and_then(|mut file| {
                file.write_all(&crc32fast::hash(body).to_le_bytes())?;
                file.write_all(body)?;
                file.sync_all()
            })
            .map_err(io_error("writing", &temporary))
            .and_then(|()| {
                std::fs::rename(&temporary, &path).map_err(io_error("renaming", &temporary))
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error("syncing", &self.dir))?;
        let kept = self.list()?;
        for (_, older_path) in kept.iter().rev().skip(KEEP) {
            std::fs::remove_file(older_path).map_err(io_error("removing", older_path))?;
        }
        Ok(())
    }

    /// The sequence of the oldest checkpoint kept (the log must keep its
    /// records from there on), if any.
    pub fn oldest(&self) -> Result<Option<u64>> {
        Ok(self.list()?.first().map(|(sequence, _)| *sequence))
    }

    /// The sequences of the checkpoints kept, newest first.
    pub fn sequences(&self) -> Result<Vec<u64>> {
        Ok(self.list()?.into_iter().rev().map(|(s, _)| s).collect())
    }

    /// The body of checkpoint `sequence`, or `None` when its checksum fails.
    pub fn read(&self, sequence: u64) -> Result<Option<Vec<u8>>> {
        let path = self.dir.join(name(sequence));
        let bytes = std::fs::read(&path).map_err(io_error("reading", &path))?;
        if bytes.len() >= 4 {
            let (crc, body) = bytes.split_at(4);
            if u32::from_le_bytes(crc.try_into().expect("4 bytes")) == crc32fast::hash(body) {
                return Ok(Some(body.to_vec()));
            }
        }
        Ok(None)
    }

    fn list(&self) -> Result<Vec<(u64, PathBuf)>> {
        numbered_files(&self.dir, "checkpoint-", ".bin", true)
    }

    /// The newest checkpoint whose checksum holds: `(sequence, body)`.
    pub fn latest(&self) -> Result<Option<(u64, Vec<u8>)>> {
        for sequence in self.sequences()? {
            if let Some(body) = self.read(sequence)? {
                return Ok(Some((sequence, body)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_valid_checkpoint_wins() {
        let dir = tempfile::tempdir().unwrap();
        let checkpoints = Checkpoints::new(dir.path());
        assert_eq!(checkpoints.latest().unwrap(), None);
        checkpoints.write(10, b"state at 10").unwrap();
        checkpoints.write(20, b"state at 20").unwrap();
        assert_eq!(
            checkpoints.latest().unwrap(),
            Some((20, b"state at 20".to_vec()))
        );
        // Up to KEEP are kept; a corrupt newest one falls back to the one before.
        checkpoints.write(30, b"state at 30").unwrap();
        checkpoints.write(40, b"state at 40").unwrap();
        assert_eq!(checkpoints.sequences().unwrap(), vec![40, 30, 20]);
        assert_eq!(checkpoints.oldest().unwrap(), Some(20));
        let path = dir.path().join(name(40));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[6] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(checkpoints.read(40).unwrap(), None);
        assert_eq!(
            checkpoints.latest().unwrap(),
            Some((30, b"state at 30".to_vec()))
        );
    }

    #[test]
    fn temporary_files_do_not_outlive_a_crash_or_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(format!("{}.tmp", name(7)));
        std::fs::write(&stale, b"half").unwrap();
        let checkpoints = Checkpoints::new(dir.path());
        assert!(!stale.exists());
        // A write that cannot rename (a directory is in the way) leaves no .tmp.
        std::fs::create_dir(dir.path().join(name(9))).unwrap();
        std::fs::write(dir.path().join(name(9)).join("x"), b"x").unwrap();
        assert!(checkpoints.write(9, b"state").is_err());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }
}
