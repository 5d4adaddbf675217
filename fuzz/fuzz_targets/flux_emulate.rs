//! The `flux_emulate` fuzz target: [`fairflow_fuzz::flux_emulate`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::flux_emulate(data));
