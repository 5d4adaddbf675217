//! The history's files in `DATA/history/` (the layout is `history`'s module
//! doc): `associations.bin`, the dictionary, and `steps-<day>.bin`, one per
//! UTC day (days since 1970) of step time. Both hold frames `[len: u32 LE]
//! [crc32(payload): u32 LE][payload]`; a step's payload is `[time: i64]
//! [rows: u32][rows x ROW_BYTES]`, a dictionary entry's `[user: u8]
//! [account length: u16][account][user]`.
//!
//! Opening reads the dictionary whole (checking every frame) and walks the
//! step files by their frames' headers only (a read of 20 bytes per step);
//! the last step frame's checksum is checked. A frame cut short or failing
//! its checksum, and everything after it, is cut from its file with a
//! warning: what a crash while writing leaves. Reads then trust the synced
//! frames before it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, PoisonError};

use fairflow_model::Time;

use super::record::{decode_row, encode_step, AssociationKey, Dictionary, HistoryPoint, ROW_BYTES};
use super::StepRead;

/// Why the history cannot do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// A file could not be read or written.
    #[error("history file {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        reason: String,
    },
    /// A read names an association the history never saw (the field: `account`
    /// or `user`).
    #[error("{field} `{name}`: {reason}")]
    Unknown {
        /// The parameter.
        field: &'static str,
        /// Its value.
        name: String,
        /// Why.
        reason: String,
    },
    /// A read's parameters do not make a range.
    #[error("{field}: {reason}")]
    BadRange {
        /// The parameter.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> HistoryError + '_ {
    move |e| HistoryError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// Where a step's frame is.
#[derive(Debug, Clone, Copy)]
struct StepEntry {
    t: Time,
    day: i64,
    /// The frame's offset in its day file.
    offset: u64,
    rows: u32,
}

/// Bytes of a frame's header, and of a step payload's before its rows.
const FRAME_HEADER: u64 = 8;
const STEP_HEADER: u64 = 12;
const DAY_SECS: Time = 86_400;

/// The history kept in a directory.
#[derive(Debug)]
pub struct HistoryStore {
    dir: PathBuf,
    retention_secs: Time,
    dictionary: Dictionary,
    steps: Vec<StepEntry>,
    /// The day file being appended to.
    current: Option<(i64, File)>,
}

/// The store, shared by its writer and the readers.
pub type SharedHistory = Arc<Mutex<HistoryStore>>;

/// `payload` framed, appended to `out`.
fn push_frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Append `frames` to `file` and sync it.
fn write_synced(file: &mut File, frames: &[u8], path: &Path) -> Result<(), HistoryError> {
    file.write_all(frames).map_err(io(path))?;
    file.sync_data().map_err(io(path))
}

fn append_file(path: &Path) -> Result<File, HistoryError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io(path))
}

/// Cut `path` at `offset`, saying why.
fn cut(path: &Path, offset: u64, why: &str) -> Result<(), HistoryError> {
    tracing::warn!(
        "history: {} {why} at byte {offset}: dropped from there (a crash while writing)",
        path.display()
    );
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io(path))?;
    file.set_len(offset).map_err(io(path))?;
    file.sync_all().map_err(io(path))
}

/// The dictionary's entries in `bytes`, and where the valid frames end.
fn read_dictionary(bytes: &[u8]) -> (Vec<AssociationKey>, usize) {
    let mut keys = Vec::new();
    let mut offset = 0usize;
    while let Some(header) = bytes.get(offset..offset + 8) {
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let Some(payload) = bytes.get(offset + 8..offset + 8 + len) else {
            break;
        };
        if crc32fast::hash(payload) != crc || payload.len() < 3 {
            break;
        }
        let account_len = u16::from_le_bytes([payload[1], payload[2]]) as usize;
        let (Some(account), Some(user)) = (
            payload.get(3..3 + account_len),
            payload.get(3 + account_len..),
        ) else {
            break;
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let user = (payload[0] == 1).then(|| text(user));
        keys.push((text(account), user));
        offset += 8 + len;
    }
    (keys, offset)
}

impl HistoryStore {
    /// Open (or create) the history in `dir`, keeping `retention_secs`
    /// before the newest step.
    pub fn open(dir: &Path, retention_secs: Time) -> Result<HistoryStore, HistoryError> {
        fairflow_store::private_dir(dir).map_err(|e| HistoryError::Io {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut store = HistoryStore {
            dir: dir.to_path_buf(),
            retention_secs: retention_secs.max(1),
            dictionary: Dictionary::default(),
            steps: Vec::new(),
            current: None,
        };
        let path = store.dictionary_path();
        if path.exists() {
            let bytes = std::fs::read(&path).map_err(io(&path))?;
            let (keys, end) = read_dictionary(&bytes);
            if end < bytes.len() {
                cut(&path, end as u64, "holds a torn dictionary entry")?;
            }
            for key in &keys {
                store.dictionary.intern(key);
            }
        }
        for (day, path) in store.day_files()? {
            store.index_day(day, &path)?;
        }
        store.check_last_step()?;
        Ok(store)
    }

    fn dictionary_path(&self) -> PathBuf {
        self.dir.join("associations.bin")
    }

    fn day_path(&self, day: i64) -> PathBuf {
        self.dir.join(format!("steps-{day}.bin"))
    }

    /// The step files, by day.
    fn day_files(&self) -> Result<Vec<(i64, PathBuf)>, HistoryError> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let entry = entry.map_err(io(&self.dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let day = name
                .strip_prefix("steps-")
                .and_then(|n| n.strip_suffix(".bin"))
                .and_then(|n| n.parse::<i64>().ok());
            if let Some(day) = day {
                found.push((day, entry.path()));
            }
        }
        found.sort();
        Ok(found)
    }

    /// Index the frames of one day file by their headers; cut a frame that
    /// runs past the end or does not hold whole rows.
    fn index_day(&mut self, day: i64, path: &Path) -> Result<(), HistoryError> {
        let mut file = File::open(path).map_err(io(path))?;
        let size = file.metadata().map_err(io(path))?.len();
        let mut offset = 0u64;
        while offset < size {
            let mut header = [0u8; (FRAME_HEADER + STEP_HEADER) as usize];
            let whole = file
                .seek(SeekFrom::Start(offset))
                .and_then(|_| file.read_exact(&mut header))
                .is_ok();
            let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as u64;
            let t = i64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
            let rows = u32::from_le_bytes(header[16..20].try_into().expect("4 bytes"));
            let fits = whole
                && len == STEP_HEADER + rows as u64 * ROW_BYTES as u64
                && offset + FRAME_HEADER + len <= size
                && self.steps.last().is_none_or(|last| last.t < t);
            if !fits {
                return cut(path, offset, "holds a torn step");
            }
            self.steps.push(StepEntry {
                t,
                day,
                offset,
                rows,
            });
            offset += FRAME_HEADER + len;
        }
        Ok(())
    }

    /// Check the last step's checksum (the frame a crash could have torn).
    fn check_last_step(&mut self) -> Result<(), HistoryError> {
        let Some(last) = self.steps.last().copied() else {
            return Ok(());
        };
        let path = self.day_path(last.day);
        let file = File::open(&path).map_err(io(&path))?;
        let len = STEP_HEADER as usize + last.rows as usize * ROW_BYTES;
        let mut frame = vec![0u8; FRAME_HEADER as usize + len];
        file.read_exact_at(&mut frame, last.offset)
            .map_err(io(&path))?;
        let crc = u32::from_le_bytes(frame[4..8].try_into().expect("4 bytes"));
        if crc32fast::hash(&frame[FRAME_HEADER as usize..]) != crc {
            self.steps.pop();
            cut(&path, last.offset, "holds a step failing its checksum")?;
        }
        Ok(())
    }

    /// The newest step's time.
    pub fn last_step(&self) -> Option<Time> {
        self.steps.last().map(|s| s.t)
    }

    /// The steps kept, oldest first.
    pub fn step_times(&self) -> Vec<Time> {
        self.steps.iter().map(|s| s.t).collect()
    }

    /// Associations in the dictionary.
    pub fn associations(&self) -> usize {
        self.dictionary.len()
    }

    /// Write one step (new dictionary entries first), each synced; a step
    /// at or before the newest is ignored. Then trim to the retention.
    pub fn append(&mut self, step: &StepRead) -> Result<(), HistoryError> {
        if self.last_step().is_some_and(|last| step.at <= last) {
            return Ok(());
        }
        let (rows, added) = encode_step(step, &mut self.dictionary);
        if !added.is_empty() {
            let path = self.dictionary_path();
            let mut file = append_file(&path)?;
            let mut frames = Vec::new();
            for (account, user) in &added {
                let mut payload = vec![u8::from(user.is_some())];
                payload.extend_from_slice(&(account.len() as u16).to_le_bytes());
                payload.extend_from_slice(account.as_bytes());
                payload.extend_from_slice(user.as_deref().unwrap_or("").as_bytes());
                push_frame(&mut frames, &payload);
            }
            write_synced(&mut file, &frames, &path)?;
        }
        let day = step.at.div_euclid(DAY_SECS);
        let path = self.day_path(day);
        if self.current.as_ref().is_none_or(|(open, _)| *open != day) {
            self.current = Some((day, append_file(&path)?));
        }
        let (_, file) = self.current.as_mut().expect("opened above");
        let offset = file.metadata().map_err(io(&path))?.len();
        let count = rows.len() / ROW_BYTES;
        let mut payload = Vec::with_capacity(STEP_HEADER as usize + rows.len());
        payload.extend_from_slice(&step.at.to_le_bytes());
        payload.extend_from_slice(&(count as u32).to_le_bytes());
        payload.extend_from_slice(&rows);
        let mut frame = Vec::with_capacity(payload.len() + FRAME_HEADER as usize);
        push_frame(&mut frame, &payload);
        write_synced(file, &frame, &path)?;
        self.steps.push(StepEntry {
            t: step.at,
            day,
            offset,
            rows: count as u32,
        });
        self.trim()
    }

    /// The oldest time the retention keeps.
    fn cutoff(&self) -> Option<Time> {
        Some(self.last_step()?.saturating_sub(self.retention_secs))
    }

    /// Drop the steps older than the retention; delete the day files all
    /// of whose steps are.
    fn trim(&mut self) -> Result<(), HistoryError> {
        let Some(cutoff) = self.cutoff() else {
            return Ok(());
        };
        let kept = self.steps.partition_point(|s| s.t < cutoff);
        let gone: Vec<i64> = self.steps[..kept].iter().map(|s| s.day).collect();
        self.steps.drain(..kept);
        let first_day = self.steps.first().map_or(i64::MAX, |s| s.day);
        for day in gone.into_iter().filter(|&d| d < first_day) {
            let path = self.day_path(day);
            match std::fs::remove_file(&path) {
                Ok(()) => tracing::debug!("history: {} is past the retention", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&path)(e)),
            }
        }
        Ok(())
    }

    /// The series of one association, `from..=to` (either end open): an
    /// account (`user` `None`) or a user association.
    pub fn series(
        &self,
        account: &str,
        user: Option<&str>,
        from: Option<Time>,
        to: Option<Time>,
    ) -> Result<Vec<HistoryPoint>, HistoryError> {
        check_range(from, to)?;
        let id = find_id(&self.dictionary, account, user)?;
        let (from, to) = (from.unwrap_or(Time::MIN), to.unwrap_or(Time::MAX));
        let mut points = Vec::new();
        let mut open: Option<(i64, File)> = None;
        for step in self.steps.iter().filter(|s| s.t >= from && s.t <= to) {
            if id >= step.rows {
                continue;
            }
            if open.as_ref().is_none_or(|(day, _)| *day != step.day) {
                let path = self.day_path(step.day);
                open = Some((step.day, File::open(&path).map_err(io(&path))?));
            }
            let (_, file) = open.as_ref().expect("opened above");
            let mut row = [0u8; ROW_BYTES];
            let at = step.offset + FRAME_HEADER + STEP_HEADER + id as u64 * ROW_BYTES as u64;
            file.read_exact_at(&mut row, at)
                .map_err(io(&self.day_path(step.day)))?;
            points.extend(decode_row(step.t, &row));
        }
        Ok(points)
    }
}

/// `from` after `to` is no range.
pub fn check_range(from: Option<Time>, to: Option<Time>) -> Result<(), HistoryError> {
    match (from, to) {
        (Some(from), Some(to)) if from > to => Err(HistoryError::BadRange {
            field: "from",
            reason: format!("{from} is after `to` ({to})"),
        }),
        _ => Ok(()),
    }
}

/// The id of the asked association, or which field names what is unknown.
pub fn find_id(
    dictionary: &Dictionary,
    account: &str,
    user: Option<&str>,
) -> Result<u32, HistoryError> {
    if !dictionary.has_account(account) {
        return Err(HistoryError::Unknown {
            field: "account",
            name: account.to_string(),
            reason: "no such account in the history".to_string(),
        });
    }
    dictionary
        .id(account, user)
        .ok_or_else(|| HistoryError::Unknown {
            field: "user",
            name: user.unwrap_or_default().to_string(),
            reason: format!("no association of this user in account `{account}` in the history"),
        })
}

/// Start the thread that writes the steps handed to the returned sender
/// into `store`, in order; a step that cannot be written is logged and
/// skipped (the history has a gap there; the service goes on).
pub fn spawn_writer(store: SharedHistory) -> std::io::Result<mpsc::SyncSender<StepRead>> {
    let (sender, receiver) = mpsc::sync_channel::<StepRead>(2);
    std::thread::Builder::new()
        .name("fairflow-history".into())
        .spawn(move || {
            for step in receiver {
                let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
                if let Err(e) = store.append(&step) {
                    tracing::warn!(at = step.at, "history step not written: {e}");
                }
            }
        })?;
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::config::Algorithm;
    use fairflow_model::report::{FairshareRow, FairshareTable};

    /// A Fair Tree table: root, account `a` (LevelFS 2, factor none) and
    /// users `x` (factor 0.75) and, unless `without_y`, `y` (factor 0.5,
    /// LevelFS infinite) in it.
    fn step(at: Time, raw_usage: u64, without_y: bool) -> StepRead {
        let mut rows = vec![FairshareRow::new("root", None, 0)];
        let mut a = FairshareRow::new("a", None, 1);
        a.level_fs = Some(2.0);
        a.raw_usage = raw_usage;
        rows.push(a);
        let mut x = FairshareRow::new("a", Some("x"), 2);
        x.fairshare = Some(0.75);
        rows.push(x);
        if !without_y {
            let mut y = FairshareRow::new("a", Some("y"), 2);
            y.fairshare = Some(0.5);
            y.level_fs = Some(f64::INFINITY);
            rows.push(y);
        }
        let table = FairshareTable {
            algorithm: Algorithm::FairTree,
            as_of: at,
            rows,
        };
        // Beside root, a, x and y: x's 3 pending jobs are all beyond the
        // queue's first 50 entries, y's best of 4 is second in line.
        let mut pending = vec![(0, 0), (0, 0), (3, 0), (4, 2)];
        pending.truncate(table.rows.len());
        StepRead {
            at,
            table: Arc::new(table),
            pending,
            rank_depth: 50,
        }
    }

    #[test]
    fn steps_are_read_back_after_a_reopen_and_a_torn_dictionary_entry_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = HistoryStore::open(dir.path(), 86_400).unwrap();
        store.append(&step(600, 10, false)).unwrap();
        store.append(&step(900, 20, true)).unwrap();
        // At or before the newest: ignored.
        store.append(&step(900, 99, false)).unwrap();
        drop(store);
        // A torn entry after the four whole ones (what a crash leaves).
        let dictionary = dir.path().join("associations.bin");
        let mut file = OpenOptions::new().append(true).open(&dictionary).unwrap();
        file.write_all(&[9, 0, 0, 0, 1, 2]).unwrap();
        drop(file);
        let store = HistoryStore::open(dir.path(), 86_400).unwrap();
        assert_eq!(store.associations(), 4);
        assert_eq!(store.step_times(), [600, 900]);
        let a = store.series("a", None, None, None).unwrap();
        assert_eq!((a[0].raw_usage, a[1].raw_usage), (10, 20));
        assert_eq!(
            (a[0].level_fs, a[0].rank, a[0].fairshare),
            (Some(2.0), Some(1), None)
        );
        // y is absent at 900: one point. Its LevelFS is infinite; it ranks
        // second among users (0.5 after x's 0.75); 4 pending, best rank 2.
        let y = store.series("a", Some("y"), None, None).unwrap();
        assert_eq!(y.len(), 1);
        assert!(y[0].level_fs_infinite && y[0].level_fs.is_none());
        assert_eq!(
            (y[0].rank, y[0].pending_jobs, y[0].best_queue_rank),
            (Some(2), Some(4), Some(2))
        );
        assert_eq!(y[0].best_queue_rank_beyond, None);
        let x = store.series("a", Some("x"), Some(700), None).unwrap();
        assert_eq!(
            (x.len(), x[0].t, x[0].rank, x[0].pending_jobs),
            (1, 900, Some(1), Some(3))
        );
        assert_eq!(
            (x[0].best_queue_rank, x[0].best_queue_rank_beyond),
            (None, Some(50))
        );
        let unknown = store.series("b", None, None, None).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "account `b`: no such account in the history"
        );
        let range = store.series("a", None, Some(5), Some(4)).unwrap_err();
        assert_eq!(range.to_string(), "from: 5 is after `to` (4)");
    }
}
