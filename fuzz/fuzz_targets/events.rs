//! The event-log reader, parser and validator: any bytes, as a log.
#![no_main]
use fairflow_ingest::reader::read_events;
use fairflow_ingest::Validator;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut validator = Validator::default();
    for line in read_events(data).flatten() {
        if let Ok(event) = line.event {
            let _ = validator.check(line.line, &event);
        }
    }
});
