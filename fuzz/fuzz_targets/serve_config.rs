//! The `serve_config` fuzz target: [`fairflow_fuzz::serve_config`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::serve_config(data));
