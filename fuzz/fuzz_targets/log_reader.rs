//! The `log_reader` fuzz target: [`fairflow_fuzz::log_reader`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::log_reader(data));
