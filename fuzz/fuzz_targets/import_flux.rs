//! The `import_flux` fuzz target: [`fairflow_fuzz::import_flux`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::import_flux(data));
