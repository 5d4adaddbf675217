//! The `snapshot` fuzz target: [`fairflow_fuzz::snapshot`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::snapshot(data));
