//! The `jobcomp/filetxt` reader: any text, records joined over lines.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut reader = fairflow_ingest::jobcomp::JobcompReader::local();
        for (i, line) in text.lines().enumerate() {
            let _ = reader.line(i as u64 + 1, line);
        }
    }
});
