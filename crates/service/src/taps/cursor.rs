//! Where each file tap is, kept in the durable log: a tap's write carries
//! its [`TapCursor`] (the tap's name and its [`FilePosition`] after the
//! lines of the write), and the applier logs it as a `#tap <name> <json>`
//! record in the same append as the write's events (before them, as an
//! idempotency key is), even when every line was rejected. Replay skips it as
//! an event and keeps the last cursor of each tap; the applier logs every
//! tap's last cursor again after each checkpoint, so it outlives the segments
//! the checkpoint lets go. At start each tap goes on from its recovered
//! cursor (`fairflow_ingest::follow`), so a restart charges nothing twice.

use std::collections::BTreeMap;

use fairflow_ingest::follow::FilePosition;
use serde::{Deserialize, Serialize};

/// The prefix of a tap cursor record in the log.
pub const TAP_RECORD_PREFIX: &str = "#tap ";

/// The longest tap name, bytes.
const MAX_TAP_NAME_BYTES: usize = 64;

/// A tap and where it is in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapCursor {
    /// The tap (`jobcomp`, `flux-journal`, `replay`).
    pub tap: String,
    /// Its position after the lines of the write that carries it.
    pub position: FilePosition,
}

/// The last cursor of each tap, by tap name.
pub type TapCursors = BTreeMap<String, FilePosition>;

impl TapCursor {
    /// A cursor of `tap` at `position`.
    pub fn new(tap: &str, position: FilePosition) -> Self {
        TapCursor {
            tap: tap.to_string(),
            position,
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
        let position = serde_json::from_str(json).ok()?;
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
        assert_eq!(TapCursor::parse("#idempotency abc"), None);
        assert_eq!(TapCursor::parse("#tap jobcomp {\"dev\":1}"), None);
        assert_eq!(TapCursor::parse("#tap  {}"), None);
    }
}
