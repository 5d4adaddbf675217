//! The `swf` fuzz target: [`fairflow_fuzz::swf`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::swf(data));
