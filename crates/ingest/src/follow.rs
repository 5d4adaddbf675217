//! Following a growing text file, as `tail -F` does: complete lines are
//! returned as they are appended; a line still being written stays buffered
//! until its newline arrives; rotation (the path now names another file) and
//! truncation are detected, the rest of the old file is read first, then the
//! new one from its start. Polling, so it works on any filesystem.
//!
//! Memory is bounded however fast the file grows: a poll reads at most the
//! bytes it is given (the rest waits for the next poll), and a line longer
//! than the follower's line limit is not held: its bytes are dropped as they
//! are read and it is returned as a [`LineTooLong`] at its newline.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The default longest line a [`Follower`] holds, bytes.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// A line longer than the follower's limit, dropped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong {
    /// The limit it exceeded, bytes.
    pub limit_bytes: usize,
}

/// A line returned by [`Follower::poll`]: its number (counted across
/// rotations) and its bytes, or why they were dropped.
pub type FollowedLine = (u64, Result<Vec<u8>, LineTooLong>);

/// A followed file.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    offset: u64,
    partial: Vec<u8>,
    /// The line being read is over `max_line_bytes`: its bytes are dropped.
    overlong: bool,
    max_line_bytes: usize,
    line: u64,
}

fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

impl Follower {
    /// Follow `path` from its start (the file may not exist yet), holding
    /// lines of at most [`DEFAULT_MAX_LINE_BYTES`].
    pub fn new(path: impl AsRef<Path>) -> Self {
        Follower::with_max_line_bytes(path, DEFAULT_MAX_LINE_BYTES)
    }

    /// Follow `path`, holding lines of at most `max_line_bytes`.
    pub fn with_max_line_bytes(path: impl AsRef<Path>, max_line_bytes: usize) -> Self {
        Follower {
            path: path.as_ref().to_path_buf(),
            file: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
            overlong: false,
            max_line_bytes,
            line: 0,
        }
    }

    /// End the line being read.
    fn end_line(&mut self, out: &mut Vec<FollowedLine>) {
        self.line += 1;
        let line = if std::mem::take(&mut self.overlong) {
            Err(LineTooLong {
                limit_bytes: self.max_line_bytes,
            })
        } else {
            Ok(std::mem::take(&mut self.partial))
        };
        out.push((self.line, line));
    }

    /// Read at most `budget` bytes of what the current handle has after
    /// `offset`, splitting complete lines; the bytes read.
    fn drain(&mut self, out: &mut Vec<FollowedLine>, budget: usize) -> std::io::Result<usize> {
        let Some(file) = self.file.as_mut() else {
            return Ok(0);
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buffer = Vec::new();
        let read = file.take(budget as u64).read_to_end(&mut buffer)?;
        self.offset += read as u64;
        for byte in buffer {
            if byte == b'\n' {
                self.end_line(out);
            } else if self.overlong {
            } else if self.partial.len() < self.max_line_bytes {
                self.partial.push(byte);
            } else {
                self.overlong = true;
                self.partial = Vec::new();
            }
        }
        Ok(read)
    }

    /// The complete lines appended since the last poll, reading at most
    /// `max_bytes` (at least 1; what is left waits for the next poll), with
    /// their line numbers (counted across rotations), as raw bytes.
    pub fn poll(&mut self, max_bytes: usize) -> std::io::Result<Vec<FollowedLine>> {
        let budget = max_bytes.max(1);
        let mut out = Vec::new();
        let current = match std::fs::metadata(&self.path) {
            Ok(meta) => Some((identity(&meta), meta.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        match current {
            Some((id, len)) if Some(id) == self.identity => {
                if len < self.offset {
                    // Truncated in place: start again from the top.
                    self.offset = 0;
                    self.partial.clear();
                    self.overlong = false;
                }
                self.drain(&mut out, budget)?;
            }
            Some((id, _)) => {
                // A new file at the path: finish the old one, then switch
                // (unless the budget ran out first: the next poll goes on).
                let read = self.drain(&mut out, budget)?;
                if read == budget {
                    return Ok(out);
                }
                if !self.partial.is_empty() || self.overlong {
                    self.end_line(&mut out);
                }
                self.file = Some(File::open(&self.path)?);
                self.identity = Some(id);
                self.offset = 0;
                self.drain(&mut out, budget - read)?;
            }
            None => {
                self.drain(&mut out, budget)?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn texts(lines: Vec<FollowedLine>) -> Vec<(u64, String)> {
        lines
            .into_iter()
            .map(|(n, b)| (n, String::from_utf8(b.unwrap()).unwrap()))
            .collect()
    }

    #[test]
    fn appends_partial_lines_rotation_and_truncation() {
        let dir = std::env::temp_dir().join(format!("fairflow-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jobcomp.log");
        let mut follower = Follower::new(&path);
        assert!(follower.poll(usize::MAX).unwrap().is_empty());
        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(1, "one".into())]
        );
        f.write_all(b"o\nthree\n").unwrap();
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(2, "two".into()), (3, "three".into())]
        );
        // Rotation: the old file gets a last line, then is renamed; a new one starts.
        f.write_all(b"four\n").unwrap();
        std::fs::rename(&path, dir.join("jobcomp.log.1")).unwrap();
        let mut g = File::create(&path).unwrap();
        g.write_all(b"five\n").unwrap();
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(4, "four".into()), (5, "five".into())]
        );
        // Truncation in place.
        g.set_len(0).unwrap();
        let mut g = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        g.write_all(b"six\n").unwrap();
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(6, "six".into())]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_poll_reads_at_most_its_budget_and_overlong_lines_are_not_held() {
        let dir =
            std::env::temp_dir().join(format!("fairflow-follow-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jobcomp.log");
        // Ten lines of 9 bytes and a newline: 100 bytes appended at once.
        let body: String = (0..10).map(|i| format!("line-{i:04}\n")).collect();
        std::fs::write(&path, &body).unwrap();
        let mut follower = Follower::with_max_line_bytes(&path, 16);
        // 25 bytes: lines 1 and 2 complete (20 bytes), 5 bytes of line 3 held.
        let first = texts(follower.poll(25).unwrap());
        assert_eq!(
            first,
            vec![(1, "line-0000".into()), (2, "line-0001".into())]
        );
        let second = texts(follower.poll(25).unwrap());
        assert_eq!(second.iter().map(|l| l.0).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(second[0].1, "line-0002");
        // The other 50 bytes (5 lines) come with a poll big enough for them.
        assert_eq!(follower.poll(1_000).unwrap().len(), 5);
        // A 40-byte line over the 16-byte limit: dropped as it is read, then
        // reported once at its newline; the next line is intact.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[b'x'; 40]).unwrap();
        f.write_all(b"\nshort\n").unwrap();
        let mut got = follower.poll(30).unwrap();
        assert!(got.is_empty(), "no newline in the first 30 bytes");
        assert!(
            follower.partial.len() <= 16,
            "held {}",
            follower.partial.len()
        );
        got.extend(follower.poll(30).unwrap());
        assert_eq!(
            got,
            vec![
                (11, Err(LineTooLong { limit_bytes: 16 })),
                (12, Ok(b"short".to_vec()))
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
