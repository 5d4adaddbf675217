//! Checkpoints: opaque state snapshots tagged with the log sequence they cover
//! (`checkpoint-<sequence>.bin`), written to a temporary file, synced and
//! renamed into place, so a crash leaves either the old checkpoint or the new
//! one, never a half-written one. Each file carries a CRC-32 of its body.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{io_error, numbered_files, Result};

/// The checkpoints of a data directory.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
}

fn name(sequence: u64) -> String {
    format!("checkpoint-{sequence:020}.bin")
}

impl Checkpoints {
    /// The checkpoints kept in `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Checkpoints {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// Write a checkpoint covering the log's records before `sequence`, then
    /// remove older ones.
    pub fn write(&self, sequence: u64, body: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(io_error("creating", &self.dir))?;
        let path = self.dir.join(name(sequence));
        let temporary = self.dir.join(format!("{}.tmp", name(sequence)));
        let mut file = File::create(&temporary).map_err(io_error("creating", &temporary))?;
        file.write_all(&crc32fast::hash(body).to_le_bytes())
            .and_then(|_| file.write_all(body))
            .and_then(|_| file.sync_all())
            .map_err(io_error("writing", &temporary))?;
        std::fs::rename(&temporary, &path).map_err(io_error("renaming", &temporary))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error("syncing", &self.dir))?;
        for (older, older_path) in self.list()? {
            if older < sequence {
                std::fs::remove_file(&older_path).map_err(io_error("removing", &older_path))?;
            }
        }
        Ok(())
    }

    fn list(&self) -> Result<Vec<(u64, PathBuf)>> {
        numbered_files(&self.dir, "checkpoint-", ".bin", true)
    }

    /// The newest checkpoint whose checksum holds: `(sequence, body)`.
    pub fn latest(&self) -> Result<Option<(u64, Vec<u8>)>> {
        for (sequence, path) in self.list()?.into_iter().rev() {
            let bytes = std::fs::read(&path).map_err(io_error("reading", &path))?;
            if bytes.len() >= 4 {
                let (crc, body) = bytes.split_at(4);
                if u32::from_le_bytes(crc.try_into().expect("4 bytes")) == crc32fast::hash(body) {
                    return Ok(Some((sequence, body.to_vec())));
                }
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
        // Only the newest is kept.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // A corrupt newest one falls back to none (older ones were removed).
        let path = dir.path().join(name(20));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[6] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(checkpoints.latest().unwrap(), None);
    }
}
