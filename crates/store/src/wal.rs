//! The write-ahead event log. Segments `events-<first sequence>.wal` hold
//! frames `[len: u32 LE][crc32(payload): u32 LE][payload]`; a record's
//! sequence number is its position in the whole log (from 0). Opening scans
//! every segment: the first frame that is short or fails its checksum ends the
//! log, and the file is truncated there (later segments, which cannot exist
//! after a clean write, are removed).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::{io_error, Result, StoreError};

/// The largest record accepted (16 MiB).
pub const MAX_RECORD_BYTES: usize = 16 << 20;

/// What opening found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Records kept, from sequence `first_kept`, in order.
    pub records: Vec<Vec<u8>>,
    /// The sequence number of `records[0]`.
    pub first_kept: u64,
    /// Bytes cut from a torn or corrupt tail.
    pub truncated_bytes: u64,
}

/// An open log, appending to its last segment.
#[derive(Debug)]
pub struct EventLog {
    dir: PathBuf,
    segment: File,
    segment_path: PathBuf,
    next_sequence: u64,
}

fn segment_name(first: u64) -> String {
    format!("events-{first:020}.wal")
}

fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    crate::numbered_files(dir, "events-", ".wal", false)
}

/// Read the frames of one segment; returns the records and the length of the
/// valid prefix.
fn scan_segment(path: &Path) -> Result<(Vec<Vec<u8>>, u64, u64)> {
    let file = File::open(path).map_err(io_error("opening", path))?;
    let total = file.metadata().map_err(io_error("reading", path))?.len();
    let mut reader = BufReader::new(file);
    let mut records = Vec::new();
    let mut valid = 0u64;
    loop {
        let mut header = [0u8; 8];
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io_error("reading", path)(e)),
        }
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if len > MAX_RECORD_BYTES || valid + 8 + len as u64 > total {
            break;
        }
        let mut payload = vec![0u8; len];
        if reader.read_exact(&mut payload).is_err() || crc32fast::hash(&payload) != crc {
            break;
        }
        valid += 8 + len as u64;
        records.push(payload);
    }
    Ok((records, valid, total))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing", dir))
}

impl EventLog {
    /// Open (or create) the log in `dir`, cutting any torn tail, and return
    /// the records that survive from the oldest kept segment on.
    pub fn open(dir: impl AsRef<Path>) -> Result<(EventLog, Recovery)> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(io_error("creating", &dir))?;
        let segments = list_segments(&dir)?;
        let mut recovery = Recovery {
            records: Vec::new(),
            first_kept: 0,
            truncated_bytes: 0,
        };
        let mut last: Option<(u64, PathBuf)> = None;
        let mut next_sequence = 0;
        let mut cut = false;
        for (index, (first, path)) in segments.iter().enumerate() {
            if cut {
                // Nothing after a torn frame can be trusted.
                recovery.truncated_bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                std::fs::remove_file(path).map_err(io_error("removing", path))?;
                continue;
            }
            if index == 0 {
                recovery.first_kept = *first;
            }
            let (records, valid, total) = scan_segment(path)?;
            next_sequence = first + records.len() as u64;
            recovery.records.extend(records);
            if valid < total {
                let file = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(io_error("opening", path))?;
                file.set_len(valid).map_err(io_error("truncating", path))?;
                file.sync_all().map_err(io_error("syncing", path))?;
                recovery.truncated_bytes += total - valid;
                cut = true;
            }
            last = Some((*first, path.clone()));
        }
        let segment_path = match last {
            Some((_, path)) => path,
            None => dir.join(segment_name(0)),
        };
        let segment = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&segment_path)
            .map_err(io_error("opening", &segment_path))?;
        sync_dir(&dir)?;
        Ok((
            EventLog {
                dir,
                segment,
                segment_path,
                next_sequence,
            },
            recovery,
        ))
    }

    /// The sequence number the next appended record gets.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Append records and sync them to disk; returns the sequence number of
    /// the first. Nothing is acknowledged before this returns.
    pub fn append(&mut self, records: &[Vec<u8>]) -> Result<u64> {
        let mut buffer = Vec::new();
        for record in records {
            if record.len() > MAX_RECORD_BYTES {
                return Err(StoreError::RecordTooLarge {
                    len: record.len(),
                    limit: MAX_RECORD_BYTES,
                });
            }
            buffer.extend_from_slice(&(record.len() as u32).to_le_bytes());
            buffer.extend_from_slice(&crc32fast::hash(record).to_le_bytes());
            buffer.extend_from_slice(record);
        }
        let path = &self.segment_path;
        self.segment
            .write_all(&buffer)
            .map_err(io_error("writing", path))?;
        self.segment
            .sync_data()
            .map_err(io_error("syncing", path))?;
        let first = self.next_sequence;
        self.next_sequence += records.len() as u64;
        Ok(first)
    }

    /// Start a new segment at the current sequence and delete the segments
    /// that hold only records before `keep_from` (covered by a checkpoint).
    pub fn rotate(&mut self, keep_from: u64) -> Result<()> {
        let path = self.dir.join(segment_name(self.next_sequence));
        if path != self.segment_path {
            self.segment = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io_error("opening", &path))?;
            self.segment_path = path;
        }
        let segments = list_segments(&self.dir)?;
        for window in segments.windows(2) {
            let ((_, old), (next_first, _)) = (&window[0], &window[1]);
            if *next_first <= keep_from {
                std::fs::remove_file(old).map_err(io_error("removing", old))?;
            }
        }
        sync_dir(&self.dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("{{\"op\":\"tick\",\"t\":{i}}}").into_bytes())
            .collect()
    }

    #[test]
    fn appended_records_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, recovery) = EventLog::open(dir.path()).unwrap();
        assert!(recovery.records.is_empty());
        assert_eq!(log.append(&records(3)).unwrap(), 0);
        assert_eq!(log.append(&records(2)).unwrap(), 3);
        drop(log);
        let (log, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(recovery.records.len(), 5);
        assert_eq!(recovery.records[4], records(2)[1]);
        assert_eq!((recovery.truncated_bytes, log.next_sequence()), (0, 5));
    }

    #[test]
    fn a_torn_or_corrupt_tail_is_cut_and_never_applied() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = EventLog::open(dir.path()).unwrap();
        log.append(&records(4)).unwrap();
        drop(log);
        let path = dir.path().join(segment_name(0));
        let full = std::fs::read(&path).unwrap();
        // Torn: the last frame is half written.
        std::fs::write(&path, &full[..full.len() - 5]).unwrap();
        let (mut log, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(recovery.records, records(3));
        assert_eq!(
            recovery.truncated_bytes,
            (full.len() - 5 - 3 * (8 + records(4)[0].len())) as u64
        );
        // The log goes on after the cut.
        assert_eq!(log.append(&records(1)).unwrap(), 3);
        drop(log);
        // Corrupt: a flipped byte in the second record's payload cuts from there.
        let mut bytes = std::fs::read(&path).unwrap();
        let second_payload = 8 + records(1)[0].len() + 8;
        bytes[second_payload] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (_, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(recovery.records, records(1));
    }

    #[test]
    fn rotation_drops_segments_a_checkpoint_covers() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = EventLog::open(dir.path()).unwrap();
        log.append(&records(3)).unwrap();
        log.rotate(3).unwrap();
        log.append(&records(2)).unwrap();
        drop(log);
        let (log, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(
            (
                recovery.first_kept,
                recovery.records.len(),
                log.next_sequence()
            ),
            (3, 2, 5)
        );
    }
}
