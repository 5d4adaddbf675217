//! The `slurm_conf` fuzz target: [`fairflow_fuzz::slurm_conf`] under libFuzzer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fairflow_fuzz::slurm_conf(data));
