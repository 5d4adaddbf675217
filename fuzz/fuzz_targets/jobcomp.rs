//! The `jobcomp/filetxt` record parser: any text, one record a line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        for (i, line) in text.lines().enumerate() {
            let _ = fairflow_ingest::jobcomp::record_to_event(i as u64 + 1, line);
        }
    }
});
