//! Where each tap is, kept in the durable log: a tap's write carries its
//! [`TapCursor`] (the tap's name and its [`TapPosition`] after the events of
//! the write), and the applier logs it as a `#tap <name> <json>` record in
//! the same append as the write's events (before them, as an idempotency key
//! is), even when every line was rejected. Replay skips it as an event and
//! keeps the last cursor of each tap; the applier logs every tap's last
//! cursor again after each checkpoint, so it outlives the segments the
//! checkpoint lets go. At start each tap goes on from its recovered cursor
//! (`fairflow_ingest::follow`, `follow_slurm`), so a restart charges nothing
//! twice.
//!
//! A position is a file tap's [`FilePosition`] (`jobcomp`, `flux-journal`,
//! `replay`; its JSON is the position's own, as it always was) or the Slurm
//! follower's [`SlurmPosition`] (`follow-slurm`).

use std::collections::BTreeMap;

use fairflow_ingest::follow::FilePosition;
use fairflow_ingest::slurm_live::SlurmPosition;
use serde::{Deserialize, Serialize};

/// The prefix of a tap cursor record in the log.
pub const TAP_RECORD_PREFIX: &str = "#tap ";

/// The longest tap name, bytes.
const MAX_TAP_NAME_BYTES: usize = 64;

/// Where a tap is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TapPosition {
    /// A file tap's place in its file.
    File(FilePosition),
    /// What the Slurm follower has applied.
    Slurm(SlurmPosition),
}

impl TapPosition {
    /// The file position, if this is one.
    pub fn file(&self) -> Option<&FilePosition> {
        match self {
            TapPosition::File(position) => Some(position),
            TapPosition::Slurm(_) => None,
        }
    }

    /// The Slurm follower's position, if this is one.
    pub fn slurm(&self) -> Option<&SlurmPosition> {
        match self {
            TapPosition::Slurm(position) => Some(position),
            TapPosition::File(_) => None,
        }
    }
}

impl From<FilePosition> for TapPosition {
    fn from(position: FilePosition) -> Self {
        TapPosition::File(position)
    }
}

impl From<SlurmPosition> for TapPosition {
    fn from(position: SlurmPosition) -> Self {
        TapPosition::Slurm(position)
    }
}

/// A tap and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapCursor {
    /// The tap (`jobcomp`, `flux-journal`, `replay`, `follow-slurm`).
    pub tap: String,
    /// Its position after the events of the write that carries it.
    pub position: TapPosition,
}

/// The last cursor of each tap, by tap name.
pub type TapCursors = BTreeMap<String, TapPosition>;

impl TapCursor {
    /// A cursor of `tap` at `position`.
    pub fn new(tap: &str, position: impl Into<TapPosition>) -> Self {
        TapCursor {
            tap: tap.to_string(),
            position: position.into(),
        }
    }

    /// The log record that carries this cursor.
    pub fn record(&self) -> Vec<u8> {
        let json = serde_json::to_string(&self.position).expect("a position serialises");
        format!("{TAP_RECORD_PREFIX}{} {json}", self.tap).into_bytes()
    }

    /// The cursor a log record written by [`TapCursor::record`] carries, if
    /// it is one.
    pub fn parse(record: &str) -> Option<TapCursor> {
        let (tap, json) = record.strip_prefix(TAP_RECORD_PREFIX)?.split_once(' ')?;
        let valid_name = (1..=MAX_TAP_NAME_BYTES).contains(&tap.len())
            && tap.bytes().all(|b| b.is_ascii_graphic());
        let position: TapPosition = serde_json::from_str(json).ok()?;
        valid_name.then(|| TapCursor::new(tap, position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_through_its_record() {
        let cursor = TapCursor::new(
            "jobcomp",
            FilePosition {
                dev: 2049,
                inode: 77,
                offset: 1234,
                line: 9,
                head_bytes: 1234,
                head_crc32: 0xdead_beef,
            },
        );
        let record = String::from_utf8(cursor.record()).unwrap();
        assert!(
            record.starts_with("#tap jobcomp {\"dev\":2049,"),
            "{record}"
        );
        assert_eq!(TapCursor::parse(&record), Some(cursor));
        // The Slurm follower's position is a record of its own shape.
        let slurm = TapCursor::new(
            "follow-slurm",
            SlurmPosition {
                policy_digest: 7,
                usage_pass: None,
                listed_at: 1_700_000_000,
                submitted_through: Some(1_699_999_990),
            },
        );
        let record = String::from_utf8(slurm.record()).unwrap();
        assert_eq!(
            record,
            "#tap follow-slurm {\"policy_digest\":7,\"usage_pass\":null,\"listed_at\":1700000000,\"submitted_through\":1699999990}"
        );
        assert_eq!(TapCursor::parse(&record), Some(slurm));
        assert_eq!(TapCursor::parse("#idempotency abc"), None);
        assert_eq!(TapCursor::parse("#tap jobcomp {\"dev\":1}"), None);
        assert_eq!(TapCursor::parse("#tap  {}"), None);
    }
}
