//! Writes the `snapshot` target's seeds (`corpus/snapshot/<log>`): the
//! snapshot of the book of each example event log in `datasets/events`, as
//! the target reads them (a byte choosing the format version this build
//! writes, then the snapshot's body). Run again when the snapshot format
//! changes: `cargo run --release --example snapshot_seeds` (from `fuzz/`).

use std::path::PathBuf;

use fairflow_book::snapshot::{encode, OLDEST_READ, VERSION};

fn main() -> std::io::Result<()> {
    let fuzz = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = fuzz.join("corpus/snapshot");
    std::fs::create_dir_all(&out)?;
    for name in ["priority", "small", "multi_partition", "test24_4"] {
        let log = std::fs::read_to_string(fuzz.join(format!("../datasets/events/{name}.jsonl")))?;
        let (book, applied) = fairflow_fuzz::book_of(&log);
        let snapshot = encode(&book, applied);
        let choice = u8::try_from(VERSION - OLDEST_READ).expect("a few versions");
        assert_eq!(fairflow_fuzz::chosen_version(choice), VERSION);
        let header_bytes = fairflow_fuzz::framed(VERSION, &[]).len();
        let mut seed = vec![choice];
        seed.extend_from_slice(&snapshot[header_bytes..]);
        std::fs::write(out.join(name), &seed)?;
        println!(
            "corpus/snapshot/{name}: {} bytes, {applied} events",
            seed.len()
        );
    }
    Ok(())
}
