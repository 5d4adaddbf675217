//! The `events` fuzz target: [`fairflow_fuzz::events`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::events(data));
