//! The durable log's reader: any bytes as a segment, opened strictly and with
//! `--recover`; the records either open is given must be whole frames.
#![no_main]
use fairflow_store::{EventLog, OpenMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for mode in [OpenMode::Strict, OpenMode::Recover] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let segment = dir.path().join("events-00000000000000000000.wal");
        std::fs::write(&segment, data).expect("writing the segment");
        if let Ok((mut log, recovery)) = EventLog::open_with(dir.path(), mode) {
            let next = log.next_sequence();
            assert_eq!(next, recovery.first_kept + recovery.records.len() as u64);
            assert_eq!(log.append(&[b"x".to_vec()]).expect("append"), next);
        }
    }
});
