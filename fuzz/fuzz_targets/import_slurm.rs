//! The `import_slurm` fuzz target: [`fairflow_fuzz::import_slurm`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::import_slurm(data));
