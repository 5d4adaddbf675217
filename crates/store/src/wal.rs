//! The write-ahead event log. Segments `events-<first sequence>.wal` hold
//! frames `[len: u32 LE][crc32(payload): u32 LE][payload]`; a record's
//! sequence number is its position in the whole log (from 0).
//!
//! Opening scans every segment and tells a **torn tail** from **damage**:
//! - a torn tail is what a crash in the middle of an append leaves: a bad
//!   frame (short, or failing its checksum) in the *last* segment after which
//!   no valid frame follows. It was never acknowledged (an append is
//!   acknowledged only after it is synced), so it is cut and reported;
//! - damage is a bad frame followed by any valid frame (found by trying every
//!   later offset), or a bad frame in a segment that is not the last: records
//!   after it were written, synced and possibly acknowledged. Opening fails
//!   with [`StoreError::Corrupt`], naming the file and the offset, unless
//!   [`OpenMode::Recover`] is asked: then the log keeps the records before the
//!   damage, moves everything from it on aside (`<segment>.damaged-<offset>`,
//!   plus later segments renamed `.damaged`), and reports what it dropped.
//!
//! A flipped byte in the very last record looks exactly like a torn tail and
//! is cut as one; that is the one case no framing can tell apart.

use std::fs::{File, OpenOptions};
use std::io::Write;
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
    /// Bytes cut from a torn tail.
    pub truncated_bytes: u64,
    /// What [`OpenMode::Recover`] dropped, if anything.
    pub dropped: Option<Dropped>,
}

/// An open log, appending to its last segment.
#[derive(Debug)]
pub struct EventLog {
    dir: PathBuf,
    segment: File,
    segment_path: PathBuf,
    next_sequence: u64,
    /// A failed append could not be rolled back: nothing more is appended.
    damaged: bool,
}

fn segment_name(first: u64) -> String {
    format!("events-{first:020}.wal")
}

fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    crate::numbered_files(dir, "events-", ".wal", false)
}

/// Where a bad frame was found in a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame {
    /// Byte offset of the bad frame.
    pub offset: u64,
    /// Valid frames found after it (0: a torn tail).
    pub valid_frames_after: u64,
}

/// The frames of one segment.
struct Scan {
    records: Vec<Vec<u8>>,
    /// Length of the valid prefix.
    valid: u64,
    total: u64,
    bad: Option<BadFrame>,
}

/// Is there a whole frame with a matching checksum at `offset` of `bytes`?
/// Returns its length. An empty frame is 8 zero bytes (its CRC-32 is 0):
/// what a file extended with zeros holds, and never a record (the log holds
/// no empty records), so it is not a frame.
fn frame_at(bytes: &[u8], offset: usize) -> Option<usize> {
    let header = bytes.get(offset..offset + 8)?;
    let len = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
    if len == 0 || len > MAX_RECORD_BYTES {
        return None;
    }
    let payload = bytes.get(offset + 8..offset + 8 + len)?;
    (crc32fast::hash(payload) == crc).then_some(8 + len)
}

/// Count the valid frames after a bad frame at `from`: a frame is valid at
/// any later offset where its length and checksum hold; from there on frames
/// are followed by their lengths.
fn valid_frames_after(bytes: &[u8], from: usize) -> u64 {
    let mut offset = from + 1;
    while offset + 8 <= bytes.len() {
        if frame_at(bytes, offset).is_some() {
            let mut count = 0;
            while let Some(len) = frame_at(bytes, offset) {
                count += 1;
                offset += len;
            }
            return count.max(1);
        }
        offset += 1;
    }
    0
}

/// Read the frames of one segment, up to the first bad one.
fn scan_segment(path: &Path) -> Result<Scan> {
    let bytes = std::fs::read(path).map_err(io_error("reading", path))?;
    let mut records = Vec::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        match frame_at(&bytes, offset) {
            Some(len) => {
                records.push(bytes[offset + 8..offset + len].to_vec());
                offset += len;
            }
            None => break,
        }
    }
    let bad = (offset < bytes.len()).then(|| BadFrame {
        offset: offset as u64,
        valid_frames_after: valid_frames_after(&bytes, offset),
    });
    Ok(Scan {
        records,
        valid: offset as u64,
        total: bytes.len() as u64,
        bad,
    })
}

fn truncate(path: &Path, len: u64) -> Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io_error("opening", path))?;
    file.set_len(len).map_err(io_error("truncating", path))?;
    file.sync_all().map_err(io_error("syncing", path))
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error("syncing", dir))
}

/// What to do when opening finds damage (not a torn tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenMode {
    /// Refuse to open ([`StoreError::Corrupt`]).
    #[default]
    Strict,
    /// Keep the records before the damage, move the rest aside, and report it
    /// in [`Recovery::dropped`].
    Recover,
}

/// What `--recover` dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The segment the damage is in.
    pub path: PathBuf,
    /// The byte offset of the damaged frame.
    pub offset: u64,
    /// The sequence number of the first record not kept.
    pub first_lost_sequence: u64,
    /// Bytes moved aside (from the damage to the end of the log).
    pub bytes: u64,
    /// Valid-looking frames among them (their sequence numbers are unknown).
    pub valid_frames: u64,
    /// Where they were moved.
    pub moved_to: Vec<PathBuf>,
}

impl EventLog {
    /// Open (or create) the log in `dir`, cutting a torn tail, and return the
    /// records from the oldest kept segment on. Damage fails the open, or is
    /// dropped and reported under [`OpenMode::Recover`] (module documentation).
    pub fn open_with(dir: impl AsRef<Path>, mode: OpenMode) -> Result<(EventLog, Recovery)> {
        let dir = dir.as_ref().to_path_buf();
        crate::private_dir(&dir)?;
        let segments = list_segments(&dir)?;
        let mut recovery = Recovery {
            records: Vec::new(),
            first_kept: segments.first().map(|(first, _)| *first).unwrap_or(0),
            truncated_bytes: 0,
            dropped: None,
        };
        let mut last: Option<PathBuf> = None;
        let mut next_sequence = recovery.first_kept;
        for (index, (first, path)) in segments.iter().enumerate() {
            if let Some(dropped) = recovery.dropped.as_mut() {
                // After damage, under --recover: later segments are set aside.
                let aside = path.with_extension("wal.damaged");
                dropped.bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                std::fs::rename(path, &aside).map_err(io_error("renaming", path))?;
                dropped.moved_to.push(aside);
                continue;
            }
            if *first != next_sequence {
                return Err(StoreError::Corrupt {
                    path: path.display().to_string(),
                    offset: 0,
                    reason: format!(
                        "the segment starts at record {first} but the one before ends at {next_sequence}"
                    ),
                });
            }
            let scan = scan_segment(path)?;
            next_sequence = first + scan.records.len() as u64;
            recovery.records.extend(scan.records);
            last = Some(path.clone());
            let Some(bad) = scan.bad else { continue };
            let is_last = index + 1 == segments.len();
            if is_last && bad.valid_frames_after == 0 {
                // A torn tail: never acknowledged.
                truncate(path, scan.valid)?;
                recovery.truncated_bytes += scan.total - scan.valid;
                continue;
            }
            if mode == OpenMode::Strict {
                return Err(StoreError::Corrupt {
                    path: path.display().to_string(),
                    offset: bad.offset,
                    reason: format!(
                        "a damaged record (record {next_sequence}) with {} valid records after \
                         it{}: this is not a torn tail; start with --recover to keep the {} \
                         records before it and move the rest aside",
                        bad.valid_frames_after,
                        if is_last { "" } else { " and later segments" },
                        next_sequence - recovery.first_kept,
                    ),
                });
            }
            let aside = path.with_extension(format!("wal.damaged-{}", bad.offset));
            let bytes = std::fs::read(path).map_err(io_error("reading", path))?;
            std::fs::write(&aside, &bytes[scan.valid as usize..])
                .map_err(io_error("writing", &aside))?;
            truncate(path, scan.valid)?;
            recovery.dropped = Some(Dropped {
                path: path.clone(),
                offset: bad.offset,
                first_lost_sequence: next_sequence,
                bytes: scan.total - scan.valid,
                valid_frames: bad.valid_frames_after,
                moved_to: vec![aside],
            });
        }
        let segment_path = last.unwrap_or_else(|| dir.join(segment_name(0)));
        let segment = crate::private_file()
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
                damaged: false,
            },
            recovery,
        ))
    }

    /// [`EventLog::open_with`] in [`OpenMode::Strict`].
    pub fn open(dir: impl AsRef<Path>) -> Result<(EventLog, Recovery)> {
        EventLog::open_with(dir, OpenMode::Strict)
    }

    /// Go on from `sequence` when the log ends before it (its records are
    /// covered by a checkpoint, the log lost them): a new segment starts
    /// there and the older ones are removed, so sequence numbers never go
    /// backwards. Does nothing when the log is already there.
    pub fn skip_to(&mut self, sequence: u64) -> Result<()> {
        if self.next_sequence >= sequence {
            return Ok(());
        }
        self.next_sequence = sequence;
        self.rotate(sequence)
    }

    /// The segment that holds record `sequence` (the one with the greatest
    /// first sequence not after it), for messages naming a record's file.
    pub fn segment_of(&self, sequence: u64) -> Option<PathBuf> {
        list_segments(&self.dir)
            .ok()?
            .into_iter()
            .rev()
            .find(|(first, _)| *first <= sequence)
            .map(|(_, path)| path)
    }

    /// Did a failed append leave the log unable to take more (see `append`)?
    pub fn is_damaged(&self) -> bool {
        self.damaged
    }

    /// The sequence number the next appended record gets.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Append records and sync them to disk; returns the sequence number of
    /// the first. Nothing is acknowledged before this returns. A failed append
    /// is rolled back (the segment is cut to its length before it), so the
    /// log can go on once the cause (a full disk) is gone; if even the roll
    /// back fails, every later append is refused ([`StoreError::Damaged`]).
    pub fn append(&mut self, records: &[Vec<u8>]) -> Result<u64> {
        let mut buffer = Vec::new();
        for record in records {
            if record.is_empty() {
                return Err(StoreError::EmptyRecord);
            }
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
        if self.damaged {
            return Err(StoreError::Damaged {
                path: path.display().to_string(),
            });
        }
        let before = self
            .segment
            .metadata()
            .map_err(io_error("reading", path))?
            .len();
        let written = self
            .segment
            .write_all(&buffer)
            .and_then(|()| self.segment.sync_data());
        if let Err(e) = written {
            // Roll back, so that a refused append is never applied later.
            let undone = self
                .segment
                .set_len(before)
                .and_then(|()| self.segment.sync_data());
            if undone.is_err() {
                self.damaged = true;
            }
            return Err(io_error("writing", path)(e));
        }
        let first = self.next_sequence;
        self.next_sequence += records.len() as u64;
        Ok(first)
    }

    /// Start a new segment at the current sequence and delete the segments
    /// that hold only records before `keep_from` (covered by a checkpoint).
    pub fn rotate(&mut self, keep_from: u64) -> Result<()> {
        let path = self.dir.join(segment_name(self.next_sequence));
        if path != self.segment_path {
            self.segment = crate::private_file()
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
        // Damage: a flipped byte in the second record's payload, with valid
        // records after it, is not a torn tail: opening refuses, naming the
        // file and the offset of the damaged frame.
        let mut bytes = std::fs::read(&path).unwrap();
        let second = 8 + records(1)[0].len();
        bytes[second + 8] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let error = EventLog::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains(&format!("offset {second}")), "{error}");
        assert!(error.contains("2 valid records after it"), "{error}");
        // Nothing was cut by the refusal.
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // --recover keeps the intact first record and says what it dropped.
        let (mut log, recovery) = EventLog::open_with(dir.path(), OpenMode::Recover).unwrap();
        assert_eq!(recovery.records, records(1));
        let dropped = recovery.dropped.unwrap();
        assert_eq!(
            (
                dropped.offset,
                dropped.first_lost_sequence,
                dropped.valid_frames
            ),
            (second as u64, 1, 2)
        );
        assert_eq!(dropped.bytes, (bytes.len() - second) as u64);
        assert_eq!(
            std::fs::read(&dropped.moved_to[0]).unwrap(),
            bytes[second..].to_vec()
        );
        assert_eq!(log.append(&records(1)).unwrap(), 1);
    }

    #[test]
    fn a_zero_filled_tail_is_torn_not_damage() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = EventLog::open(dir.path()).unwrap();
        log.append(&records(2)).unwrap();
        drop(log);
        let path = dir.path().join(segment_name(0));
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        bytes.extend(vec![0u8; 4096]);
        std::fs::write(&path, &bytes).unwrap();
        let (_, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(
            (recovery.records.len(), recovery.truncated_bytes),
            (2, 4096)
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len as u64);
    }

    #[test]
    fn damage_in_an_earlier_segment_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = EventLog::open(dir.path()).unwrap();
        log.append(&records(2)).unwrap();
        log.rotate(0).unwrap();
        log.append(&records(2)).unwrap();
        drop(log);
        // The first segment's last record is torn-looking, but a segment follows.
        let path = dir.path().join(segment_name(0));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(matches!(
            EventLog::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_log_behind_its_checkpoint_skips_forward() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = EventLog::open(dir.path()).unwrap();
        log.skip_to(40).unwrap();
        assert_eq!(log.append(&records(1)).unwrap(), 40);
        drop(log);
        let (log, recovery) = EventLog::open(dir.path()).unwrap();
        assert_eq!(
            (
                recovery.first_kept,
                recovery.records.len(),
                log.next_sequence()
            ),
            (40, 1, 41)
        );
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
