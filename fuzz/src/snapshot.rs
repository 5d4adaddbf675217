//! The snapshot decoder (`fairflow_book::snapshot`): any bytes as a
//! snapshot, and any bytes as a snapshot's body under a right header (so the
//! fuzzer mutates valid snapshots past the checksum). A snapshot that
//! decodes is restored as a service restores it and answered from.

use fairflow_book::snapshot::{decode, encode, MAGIC, OLDEST_READ, VERSION};
use fairflow_model::limits::MAX_TIME;
use fairflow_oracle::replay::Replay;
use fairflow_oracle::{fairshare, priority};

/// How far past a restored book's time its answers are asked for: a day,
/// so the usage decays and the ages grow.
const ANSWER_AFTER_SECS: i64 = 86_400;

/// Decode `data` as it is; then, with its first byte choosing a format
/// version ([`OLDEST_READ`] to [`VERSION`]), the other bytes as the body
/// under that version's header and the body's checksum. Each snapshot that
/// decodes must encode to one that decodes to the same book, and its book
/// must answer (fair-share and priorities, a day later).
pub fn snapshot(data: &[u8]) {
    restore_and_answer(data);
    if let Some((&choice, body)) = data.split_first() {
        restore_and_answer(&framed(chosen_version(choice), body));
    }
}

/// The format version a seed's first byte chooses: [`OLDEST_READ`] +
/// `choice` modulo the count of versions read.
pub fn chosen_version(choice: u8) -> u32 {
    OLDEST_READ + u32::from(choice) % (VERSION - OLDEST_READ + 1)
}

/// `body` under the header of format `version`, with its checksum.
pub fn framed(version: u32, body: &[u8]) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// Decode; when that succeeds, check the round trip and answer from it.
fn restore_and_answer(bytes: &[u8]) {
    let Ok((book, applied)) = decode(bytes) else {
        return;
    };
    let again = encode(&book, applied);
    let (reread, reapplied) = decode(&again).expect("a re-encoded snapshot decodes");
    assert_eq!(
        reapplied, applied,
        "the applied count survives a round trip"
    );
    assert!(reread == book, "the book survives a round trip");
    let mut replay = Replay::from_book(book, applied);
    let now = replay.state().now;
    let later = now.saturating_add(ANSWER_AFTER_SECS).min(MAX_TIME).max(now);
    replay.advance_to(later);
    let factors = fairshare::user_factors(replay.state());
    let listed = priority::evaluate(replay.state(), &factors);
    let _ = priority::queue(&listed);
}
