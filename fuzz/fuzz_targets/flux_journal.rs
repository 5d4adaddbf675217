//! The `flux_journal` fuzz target: [`fairflow_fuzz::flux_journal`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::flux_journal(data));
