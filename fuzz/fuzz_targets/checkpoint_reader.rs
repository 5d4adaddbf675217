//! The checkpoint reader: any bytes as the newest checkpoint, an intact older
//! one beside it; a damaged newest one must fall back, never panic.
#![no_main]
use fairflow_store::Checkpoints;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let checkpoints = Checkpoints::new(dir.path());
    checkpoints.write(1, b"older").expect("writing a checkpoint");
    std::fs::write(dir.path().join("checkpoint-00000000000000000002.bin"), data)
        .expect("writing the fuzzed checkpoint");
    let (sequence, body) = checkpoints.latest().expect("reading").expect("one holds");
    assert!(sequence == 2 || (sequence, body.as_slice()) == (1, b"older".as_slice()));
});
