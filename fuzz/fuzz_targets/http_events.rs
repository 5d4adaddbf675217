//! The `http_events` fuzz target: [`fairflow_fuzz::http_events`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::http_events(data));
