//! The `moab_cfg` fuzz target: [`fairflow_fuzz::moab_cfg`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::moab_cfg(data));
