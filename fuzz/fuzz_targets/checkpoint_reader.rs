//! The `checkpoint_reader` fuzz target: [`fairflow_fuzz::checkpoint_reader`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::checkpoint_reader(data));
