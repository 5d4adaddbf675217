//! The `jobcomp` fuzz target: [`fairflow_fuzz::jobcomp`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::jobcomp(data));
