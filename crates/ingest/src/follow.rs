//! Following a growing text file, as `tail -F` does: complete lines are
//! returned as they are appended; a line still being written stays buffered
//! until its newline arrives; rotation (the path now names another file) and
//! truncation are detected, the rest of the old file is read first, then the
//! new one from its start. Polling, so it works on any filesystem.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A followed file.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    identity: Option<(u64, u64)>,
    offset: u64,
    partial: Vec<u8>,
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
    /// Follow `path` from its start (the file may not exist yet).
    pub fn new(path: impl AsRef<Path>) -> Self {
        Follower {
            path: path.as_ref().to_path_buf(),
            file: None,
            identity: None,
            offset: 0,
            partial: Vec::new(),
            line: 0,
        }
    }

    /// Read what the current handle has after `offset`, splitting complete lines.
    fn drain(&mut self, out: &mut Vec<(u64, Vec<u8>)>) -> std::io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buffer = Vec::new();
        let read = file.read_to_end(&mut buffer)?;
        self.offset += read as u64;
        for byte in buffer {
            if byte == b'\n' {
                self.line += 1;
                out.push((self.line, std::mem::take(&mut self.partial)));
            } else {
                self.partial.push(byte);
            }
        }
        Ok(())
    }

    /// The complete lines appended since the last poll, with their line
    /// numbers (counted across rotations), as raw bytes.
    pub fn poll(&mut self) -> std::io::Result<Vec<(u64, Vec<u8>)>> {
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
                }
                self.drain(&mut out)?;
            }
            Some((id, _)) => {
                // A new file at the path: finish the old one, then switch.
                self.drain(&mut out)?;
                if !self.partial.is_empty() {
                    self.line += 1;
                    out.push((self.line, std::mem::take(&mut self.partial)));
                }
                self.file = Some(File::open(&self.path)?);
                self.identity = Some(id);
                self.offset = 0;
                self.drain(&mut out)?;
            }
            None => self.drain(&mut out)?,
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn texts(lines: Vec<(u64, Vec<u8>)>) -> Vec<(u64, String)> {
        lines
            .into_iter()
            .map(|(n, b)| (n, String::from_utf8(b).unwrap()))
            .collect()
    }

    #[test]
    fn appends_partial_lines_rotation_and_truncation() {
        let dir = std::env::temp_dir().join(format!("fairflow-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jobcomp.log");
        let mut follower = Follower::new(&path);
        assert!(follower.poll().unwrap().is_empty());
        let mut f = File::create(&path).unwrap();
        f.write_all(b"one\ntw").unwrap();
        assert_eq!(texts(follower.poll().unwrap()), vec![(1, "one".into())]);
        f.write_all(b"o\nthree\n").unwrap();
        assert_eq!(
            texts(follower.poll().unwrap()),
            vec![(2, "two".into()), (3, "three".into())]
        );
        // Rotation: the old file gets a last line, then is renamed; a new one starts.
        f.write_all(b"four\n").unwrap();
        std::fs::rename(&path, dir.join("jobcomp.log.1")).unwrap();
        let mut g = File::create(&path).unwrap();
        g.write_all(b"five\n").unwrap();
        assert_eq!(
            texts(follower.poll().unwrap()),
            vec![(4, "four".into()), (5, "five".into())]
        );
        // Truncation in place.
        g.set_len(0).unwrap();
        let mut g = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        g.write_all(b"six\n").unwrap();
        assert_eq!(texts(follower.poll().unwrap()), vec![(6, "six".into())]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
