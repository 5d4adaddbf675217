//! The event-log reader, parser and the book's checks: any bytes, as a log.
#![no_main]
use fairflow_book::Book;
use fairflow_ingest::reader::read_events;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut book = Book::default();
    for line in read_events(data).flatten() {
        if let Ok(event) = line.event {
            let _ = book.apply(line.line, &event);
        }
    }
});
