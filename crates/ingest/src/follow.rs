//! Following a growing text file, as `tail -F` does: complete lines are
//! returned as they are appended; a line still being written stays buffered
//! until its newline arrives. Polling, so it works on any filesystem.
//!
//! **Where it is, and whether the file is still the one it read.** A
//! follower's [`FilePosition`] names the file (device and inode), the end of
//! the last complete line, the lines read and a CRC-32 of the file's first
//! bytes (at most [`HEAD_BYTES`], never past the position). A follower
//! started from a position ([`Follower::resume`]) goes on where it was when
//! the file at the path is the same one (identity and first bytes) and not
//! shorter. Every rotation is detected, at start and while following:
//! - rename (the path names another file): the rest of the old file is read
//!   first (through the open handle, or at start the file beside the path
//!   that has the old identity or first bytes), then the new one from its
//!   start;
//! - copy-truncate, a shorter file, or a file rewritten in place (the first
//!   bytes changed, which catches a truncated file already grown past the
//!   position): the rest of the old content is read from the copy beside the
//!   path when one starts with the same bytes, then the file from its start;
//! - at start, a file at the path that is not the one read and whose old
//!   content is nowhere beside it: read from its start.
//!
//! Every such decision is a note ([`Follower::take_notes`]) for the caller to
//! log once. "Beside the path" means a regular file in the same directory
//! whose name starts with the followed file's name (`jobcomp.log.1`,
//! `jobcomp.log-20250101`); compressed rotations cannot match.
//!
//! Memory is bounded however fast the file grows: a poll reads at most the
//! bytes it is given (the rest waits for the next poll), and a line longer
//! than the follower's line limit is not held: its bytes are dropped as they
//! are read and it is returned as a [`LineTooLong`] at its newline.

use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The default longest line a [`Follower`] holds, bytes.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// The most bytes of a file's start digested and compared, to tell a file
/// from another one at the same path.
pub const HEAD_BYTES: usize = 4096;

/// A line longer than the follower's limit, dropped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong {
    /// The limit it exceeded, bytes.
    pub limit_bytes: usize,
}

/// A line returned by [`Follower::poll`]: its number (counted across
/// rotations) and its bytes, or why they were dropped.
pub type FollowedLine = (u64, Result<Vec<u8>, LineTooLong>);

/// Where a reader is in a file: enough to go on after a restart and to tell
/// the same file from a rotated, truncated or replaced one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePosition {
    /// The file's device.
    pub dev: u64,
    /// The file's inode.
    pub inode: u64,
    /// Bytes read: the end of the last complete line.
    pub offset: u64,
    /// Lines read (for a follower, counted across rotations).
    pub line: u64,
    /// How many of the file's first bytes `head_crc32` covers (at most
    /// [`HEAD_BYTES`]).
    pub head_bytes: u64,
    /// CRC-32 of the file's first `head_bytes` bytes.
    pub head_crc32: u32,
}

impl FilePosition {
    /// The file's identity (device, inode).
    pub fn identity(&self) -> (u64, u64) {
        (self.dev, self.inode)
    }

    /// Is `file` (of metadata `meta`) the file this position is in: the same
    /// identity, first bytes, and at least `offset` long? Its first bytes,
    /// if so.
    pub fn same_file(&self, file: &mut File, meta: &Metadata) -> Option<Vec<u8>> {
        if identity(meta) != self.identity() {
            return None;
        }
        self.head_matches(file, meta)
    }

    /// Does `file` (of metadata `meta`) start with the bytes this position
    /// digested, and is it at least `offset` long? Its first bytes, if so.
    pub fn head_matches(&self, file: &mut File, meta: &Metadata) -> Option<Vec<u8>> {
        if meta.len() < self.offset || self.head_bytes > HEAD_BYTES as u64 {
            return None;
        }
        let head = read_head(file, self.head_bytes as usize).ok()??;
        (crc32fast::hash(&head) == self.head_crc32).then_some(head)
    }
}

/// The first `bytes` bytes of `file`, or `None` if it is shorter.
fn read_head(file: &mut File, bytes: usize) -> std::io::Result<Option<Vec<u8>>> {
    file.seek(SeekFrom::Start(0))?;
    let mut head = vec![0; bytes];
    match file.read_exact(&mut head) {
        Ok(()) => Ok(Some(head)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// The identity (device, inode) of a file.
pub fn identity(meta: &Metadata) -> (u64, u64) {
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

/// The position after the first `offset` bytes and `line` lines of `file`
/// (for a reader that does not follow, such as a replay).
pub fn position_in(file: &mut File, offset: u64, line: u64) -> std::io::Result<FilePosition> {
    let meta = file.metadata()?;
    let (dev, inode) = identity(&meta);
    let head_len = (HEAD_BYTES as u64).min(offset).min(meta.len());
    let head = read_head(file, head_len as usize)?.unwrap_or_default();
    Ok(FilePosition {
        dev,
        inode,
        offset,
        line,
        head_bytes: head.len() as u64,
        head_crc32: crc32fast::hash(&head),
    })
}

/// The first regular file beside `path` (same directory, a name that starts
/// with `path`'s and is not it), by name, for which `wanted` holds.
fn find_beside(
    path: &Path,
    mut wanted: impl FnMut(&mut File, &Metadata) -> bool,
) -> Option<(PathBuf, File)> {
    let name = path.file_name()?.to_str()?.to_string();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut beside: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n != name && n.starts_with(&name))
        })
        .collect();
    beside.sort();
    beside.into_iter().find_map(|candidate| {
        let mut file = File::open(&candidate).ok()?;
        let meta = file.metadata().ok()?;
        (meta.is_file() && wanted(&mut file, &meta)).then_some((candidate, file))
    })
}

/// A followed file.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    /// Bytes of the current file read.
    offset: u64,
    /// The end of the last complete line of the current file.
    line_end: u64,
    /// The current file's first `min(offset, HEAD_BYTES)` bytes.
    head: Vec<u8>,
    partial: Vec<u8>,
    /// The line being read is over `max_line_bytes`: its bytes are dropped.
    overlong: bool,
    max_line_bytes: usize,
    line: u64,
    /// The switch to the file at the path is already noted.
    switch_noted: bool,
    notes: Vec<String>,
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
            line_end: 0,
            head: Vec::new(),
            partial: Vec::new(),
            overlong: false,
            max_line_bytes,
            line: 0,
            switch_noted: false,
            notes: Vec::new(),
        }
    }

    /// Follow `path` from `position` (module documentation): in the same
    /// file after it; else in the old file beside the path, then the path's
    /// file from its start; else the path's file from its start. Without a
    /// position, from the start. The decision is the first note.
    pub fn resume(
        path: impl AsRef<Path>,
        max_line_bytes: usize,
        position: Option<&FilePosition>,
    ) -> Self {
        let mut follower = Follower::with_max_line_bytes(path, max_line_bytes);
        let shown = follower.path.display().to_string();
        let Some(position) = position else {
            follower.notes.push(format!(
                "no position recorded: reading {shown} from its start"
            ));
            return follower;
        };
        follower.line = position.line;
        let (offset, line) = (position.offset, position.line);
        let same = File::open(&follower.path).ok().and_then(|mut file| {
            let meta = file.metadata().ok()?;
            let head = position.same_file(&mut file, &meta)?;
            Some((file, identity(&meta), head))
        });
        if let Some((file, id, head)) = same {
            follower.adopt(file, id, head, offset);
            follower
                .notes
                .push(format!("resumed {shown} at byte {offset} (line {line})"));
            return follower;
        }
        let old = find_beside(&follower.path, |file, meta| {
            position.head_matches(file, meta).is_some()
        });
        let Some((old_path, mut file)) = old else {
            follower.notes.push(format!(
                "{shown} is not the file read before (another file, other first bytes, or \
                 shorter than byte {offset}) and the old one is not beside it: reading {shown} \
                 from its start"
            ));
            return follower;
        };
        let adopted = file.metadata().ok().and_then(|meta| {
            let head = position.head_matches(&mut file, &meta)?;
            Some((identity(&meta), head))
        });
        if let Some((id, head)) = adopted {
            follower.adopt(file, id, head, offset);
            follower.switch_noted = true;
            follower.notes.push(format!(
                "{shown} was rotated while stopped: reading the rest of {} from byte {offset} \
                 (line {line}), then {shown} from its start",
                old_path.display()
            ));
        }
        follower
    }

    /// Read `file` (identity `id`, first bytes `head`) from `offset`.
    fn adopt(&mut self, file: File, id: (u64, u64), head: Vec<u8>, offset: u64) {
        self.file = Some(file);
        self.identity = Some(id);
        self.offset = offset;
        self.line_end = offset;
        self.head = head;
    }

    /// The followed path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the follower is: the file it reads and the end of its last
    /// complete line (`None` before a file was opened).
    pub fn position(&self) -> Option<FilePosition> {
        let (dev, inode) = self.identity?;
        let head = &self.head[..self.head.len().min(self.line_end as usize)];
        Some(FilePosition {
            dev,
            inode,
            offset: self.line_end,
            line: self.line,
            head_bytes: head.len() as u64,
            head_crc32: crc32fast::hash(head),
        })
    }

    /// What the follower decided since the last call (resumed, rotated,
    /// started over), one sentence each, to be logged once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The complete lines before the position in the file being read (the
    /// ones a resumed follower skipped), with their numbers, to rebuild a
    /// reader's state (a journal's jobs): `visit` gets each line's number
    /// and bytes, or why they were dropped.
    pub fn read_before_position(
        &mut self,
        mut visit: impl FnMut(u64, Result<&[u8], LineTooLong>),
    ) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        let mut count = 0u64;
        scan_lines(file, self.line_end, self.max_line_bytes, |_| count += 1)?;
        let mut number = self.line.saturating_sub(count);
        scan_lines(file, self.line_end, self.max_line_bytes, |line| {
            number += 1;
            visit(number, line)
        })
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
        let start = self.offset;
        file.seek(SeekFrom::Start(start))?;
        let mut buffer = Vec::new();
        let read = file.take(budget as u64).read_to_end(&mut buffer)?;
        self.offset += read as u64;
        if self.head.len() as u64 == start && self.head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - self.head.len();
            self.head
                .extend_from_slice(&buffer[..room.min(buffer.len())]);
        }
        for (index, byte) in buffer.into_iter().enumerate() {
            if byte == b'\n' {
                self.end_line(out);
                self.line_end = start + index as u64 + 1;
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

    /// Does the open file still start with the bytes read from it?
    fn head_intact(&mut self) -> std::io::Result<bool> {
        let Some(file) = self.file.as_mut() else {
            return Ok(true);
        };
        if self.head.is_empty() {
            return Ok(true);
        }
        Ok(read_head(file, self.head.len())?.is_some_and(|now| now == self.head))
    }

    /// The file at the path was truncated or rewritten in place (`why`): go
    /// on in a copy of the old content beside it if there is one (the rename
    /// case of `poll` then finishes it and switches), else start it over.
    fn truncated(&mut self, why: &str) {
        let shown = self.path.display().to_string();
        let (head, offset, current) = (self.head.clone(), self.offset, self.identity);
        let copy = find_beside(&self.path, |file, meta| {
            Some(identity(meta)) != current
                && meta.len() >= offset
                && read_head(file, head.len()).ok().flatten().as_ref() == Some(&head)
        });
        match copy.and_then(|(path, file)| Some((path, identity(&file.metadata().ok()?), file))) {
            Some((copy_path, id, file)) => {
                self.notes.push(format!(
                    "{shown} was truncated ({why}) after a copy to {}: reading the rest of the \
                     copy from byte {offset}, then {shown} from its start",
                    copy_path.display()
                ));
                self.file = Some(file);
                self.identity = Some(id);
                self.switch_noted = true;
            }
            None => {
                self.notes.push(format!(
                    "{shown} was truncated or rewritten ({why}) and no copy of the old content \
                     is beside it: reading it from its start"
                ));
                self.offset = 0;
                self.line_end = 0;
                self.head.clear();
                self.partial.clear();
                self.overlong = false;
            }
        }
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
        if let Some((id, len)) = current {
            if Some(id) == self.identity && len != self.offset {
                if len < self.offset {
                    self.truncated("now shorter than the bytes read");
                } else if !self.head_intact()? {
                    self.truncated("its first bytes changed");
                }
            }
        }
        match current {
            Some((id, _)) if Some(id) == self.identity => {
                self.drain(&mut out, budget)?;
            }
            Some((id, _)) => {
                // A new file at the path: finish the old one, then switch
                // (unless the budget ran out first: the next poll goes on).
                if self.identity.is_some() && !std::mem::replace(&mut self.switch_noted, true) {
                    self.notes.push(format!(
                        "{} now names another file: reading the rest of the old one, then the \
                         new one from its start",
                        self.path.display()
                    ));
                }
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
                self.line_end = 0;
                self.head.clear();
                self.switch_noted = false;
                self.drain(&mut out, budget - read)?;
            }
            None => {
                self.drain(&mut out, budget)?;
            }
        }
        Ok(out)
    }
}

/// Call `visit` on each complete line of the first `end` bytes of `file`
/// (lines over `max_line_bytes` as [`LineTooLong`]).
fn scan_lines(
    file: &mut File,
    end: u64,
    max_line_bytes: usize,
    mut visit: impl FnMut(Result<&[u8], LineTooLong>),
) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = std::io::BufReader::new(file.take(end));
    let mut line = Vec::new();
    let mut overlong = false;
    let mut chunk = [0u8; 64 << 10];
    loop {
        let read = reader.read(&mut chunk)?;
        if read == 0 {
            return Ok(());
        }
        for &byte in &chunk[..read] {
            if byte == b'\n' {
                if std::mem::take(&mut overlong) {
                    visit(Err(LineTooLong {
                        limit_bytes: max_line_bytes,
                    }));
                } else {
                    visit(Ok(&line));
                }
                line.clear();
            } else if overlong {
            } else if line.len() < max_line_bytes {
                line.push(byte);
            } else {
                overlong = true;
                line = Vec::new();
            }
        }
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

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fairflow-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Cut `path` to nothing in place.
    fn truncate(path: &Path) {
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.set_len(0).unwrap();
    }

    /// Follow `path` to its end and return where the follower is.
    fn read_all(path: &Path, from: Option<&FilePosition>) -> (Vec<(u64, String)>, FilePosition) {
        let mut follower = Follower::resume(path, 1 << 10, from);
        let lines = texts(follower.poll(usize::MAX).unwrap());
        (lines, follower.position().unwrap())
    }

    #[test]
    fn a_resumed_follower_goes_on_after_its_position_in_the_same_file() {
        let dir = scratch("follow-resume");
        let path = dir.join("jobcomp.log");
        append(&path, "one\ntwo\nthr");
        let (lines, position) = read_all(&path, None);
        assert_eq!(lines, vec![(1, "one".into()), (2, "two".into())]);
        // The position ends at the last complete line: byte 8, line 2.
        assert_eq!(
            (position.offset, position.line, position.head_bytes),
            (8, 2, 8)
        );
        append(&path, "ee\n");
        let mut follower = Follower::resume(&path, 1 << 10, Some(&position));
        assert_eq!(
            follower.take_notes(),
            ["resumed ".to_string() + &path.display().to_string() + " at byte 8 (line 2)"]
        );
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(3, "three".into())]
        );
        // The lines before the position, for a reader's state.
        let mut before = Vec::new();
        follower
            .read_before_position(|n, line| before.push((n, line.unwrap().to_vec())))
            .unwrap();
        assert_eq!(
            before,
            vec![
                (1, b"one".to_vec()),
                (2, b"two".to_vec()),
                (3, b"three".to_vec())
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_rotation_while_stopped_reads_the_old_rest_then_the_new_file() {
        let dir = scratch("follow-rotated-stopped");
        let path = dir.join("jobcomp.log");
        append(&path, "one\ntwo\n");
        let (_, position) = read_all(&path, None);
        // Renamed, with a line written after the last read; a new file.
        append(&path, "three\n");
        std::fs::rename(&path, dir.join("jobcomp.log.1")).unwrap();
        append(&path, "four\n");
        let (lines, _) = read_all(&path, Some(&position));
        assert_eq!(lines, vec![(3, "three".into()), (4, "four".into())]);
        // Copy-truncate while stopped, the new data longer than the old
        // position: the copy's rest, then the new content, once each.
        let (_, position) = read_all(&path, None);
        append(&path, "five\n");
        std::fs::copy(&path, dir.join("jobcomp.log.2")).unwrap();
        std::fs::write(&path, "six-is-a-longer-line\n").unwrap();
        let (lines, _) = read_all(&path, Some(&position));
        assert_eq!(
            lines,
            vec![(2, "five".into()), (3, "six-is-a-longer-line".into())]
        );
        // A replaced file whose old content is nowhere: from its start.
        let (_, position) = read_all(&path, None);
        std::fs::remove_file(dir.join("jobcomp.log.2")).unwrap();
        std::fs::write(&path, "seven-also-longer-than-before\n").unwrap();
        let mut follower = Follower::resume(&path, 1 << 10, Some(&position));
        assert!(follower.take_notes()[0].contains("is not the file read before"));
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(2, "seven-also-longer-than-before".into())]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_copy_truncate_grown_past_the_position_between_polls_is_detected() {
        let dir = scratch("follow-copytruncate");
        let path = dir.join("journal.jsonl");
        append(&path, "a1\na2\n");
        let mut follower = Follower::new(&path);
        assert_eq!(follower.poll(usize::MAX).unwrap().len(), 2);
        // Between two polls: a last line, the copy, the truncation, then
        // more new bytes than were read before.
        append(&path, "a3\n");
        std::fs::copy(&path, dir.join("journal.jsonl.1")).unwrap();
        truncate(&path);
        append(&path, "b1-longer\nb2\n");
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(3, "a3".into()), (4, "b1-longer".into()), (5, "b2".into())]
        );
        assert!(follower.take_notes()[0].contains("its first bytes changed"));
        // Shorter, no copy: from the start.
        std::fs::remove_file(dir.join("journal.jsonl.1")).unwrap();
        truncate(&path);
        append(&path, "c\n");
        assert_eq!(
            texts(follower.poll(usize::MAX).unwrap()),
            vec![(6, "c".into())]
        );
        assert!(follower.take_notes()[0].contains("now shorter"));
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
