//! Snapshots of the book: what the live service checkpoints, in one format
//! that either engine writes and restores (the incremental engine rebuilds
//! its dataflow's inputs from the book; nothing of a dataflow is kept).
//!
//! # What is kept
//! The book's state (which holds Slurm's `INCR_ONLY` memory), the time of the
//! last accepted event and the count of applied events. The book's indexes
//! are derived again on restore, and the state is checked then (every parent
//! exists, the tree has no cycle, every job's association exists).
//!
//! # Format
//! `MAGIC` (8 bytes), the format version (`u32` little-endian), the CRC-32 of
//! the body (`u32` little-endian), then the body in `postcard`. A foreign or
//! damaged snapshot is a [`SnapshotError`], never a panic: the magic and the
//! version are checked, then the checksum, then the decoding, then the
//! state's consistency.

use crate::Book;

/// The first bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"FFLOWENG";

/// The format version this build writes and reads (1 held three books: the
/// validator's, the engine's ledger and an oracle state).
pub const VERSION: u32 = 2;

const HEADER_BYTES: usize = MAGIC.len() + 4 + 4;

/// Why a snapshot cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Not a fairflow snapshot.
    #[error("not a fairflow snapshot (no `FFLOWENG` header)")]
    Foreign,
    /// Written by a build with another format.
    #[error(
        "snapshot format version {found} is not supported (this build reads version {VERSION})"
    )]
    Version {
        /// The version found.
        found: u32,
    },
    /// Damaged: short, wrong checksum, undecodable or inconsistent.
    #[error("damaged snapshot: {0}")]
    Corrupt(String),
}

#[derive(serde::Serialize)]
struct BodyRef<'a> {
    book: &'a Book,
    applied: u64,
}

#[derive(serde::Deserialize)]
struct Body {
    book: Book,
    applied: u64,
}

/// `book`, which applied `applied` events, as a snapshot.
pub fn encode(book: &Book, applied: u64) -> Vec<u8> {
    let body =
        postcard::to_stdvec(&BodyRef { book, applied }).expect("a book is always serialisable");
    let mut bytes = Vec::with_capacity(HEADER_BYTES + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// Does `bytes` start like a fairflow snapshot?
pub fn is_snapshot(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The book and the applied count of a snapshot.
pub fn decode(bytes: &[u8]) -> Result<(Book, u64), SnapshotError> {
    if !is_snapshot(bytes) {
        return Err(SnapshotError::Foreign);
    }
    if bytes.len() < HEADER_BYTES {
        return Err(SnapshotError::Corrupt(format!(
            "{} bytes is shorter than the {HEADER_BYTES}-byte header",
            bytes.len()
        )));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let version = word(MAGIC.len());
    if version != VERSION {
        return Err(SnapshotError::Version { found: version });
    }
    let checksum = word(MAGIC.len() + 4);
    let body = &bytes[HEADER_BYTES..];
    if crc32fast::hash(body) != checksum {
        return Err(SnapshotError::Corrupt(
            "the checksum does not match the content".into(),
        ));
    }
    let body: Body = postcard::from_bytes(body)
        .map_err(|e| SnapshotError::Corrupt(format!("cannot decode the book: {e}")))?;
    Ok((body.book, body.applied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::reader::read_events;
    use fairflow_model::Config;

    fn book_of(log: &str) -> Book {
        let mut book = Book::new(Config::default());
        for line in read_events(log.as_bytes()) {
            let _ = book.apply_line(line.unwrap());
        }
        book
    }

    #[test]
    fn a_snapshot_restores_the_same_book_and_damage_is_an_error() {
        let book = book_of(
            r#"{"op":"account","t":1,"name":"a","shares":"parent"}
{"op":"user","t":2,"user":"u","account":"a","shares":3}
{"op":"usage","t":3,"account":"a","user":"u","amount":123456789.5}
{"op":"submit","t":4,"job":"1","user":"u","account":"a","tres":{"cpu":64}}
{"op":"start","t":5,"job":"1"}
"#,
        );
        let bytes = encode(&book, 5);
        let (restored, applied) = decode(&bytes).unwrap();
        assert_eq!(restored, book);
        assert_eq!(applied, 5);
        assert_eq!(restored.running_jobs_of("a", "u"), 1);
        assert_eq!(decode(b"{\"not\":1}"), Err(SnapshotError::Foreign));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(decode(&flipped), Err(SnapshotError::Corrupt(_))));
        let mut other_version = bytes.clone();
        other_version[8] = 1;
        assert_eq!(
            decode(&other_version),
            Err(SnapshotError::Version { found: 1 })
        );
        assert!(matches!(
            decode(&bytes[..10]),
            Err(SnapshotError::Corrupt(_))
        ));
    }
}
