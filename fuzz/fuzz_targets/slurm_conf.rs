//! `slurm.conf`'s priority lines into a configuration.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut config = fairflow_model::Config::default();
        let _ = fairflow_ingest::slurm_conf::apply_slurm_conf(&mut config, text);
    }
});
