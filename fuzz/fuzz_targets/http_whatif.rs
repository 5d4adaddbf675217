//! The `http_whatif` fuzz target: [`fairflow_fuzz::http_whatif`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::http_whatif(data));
