//! `import slurm`: the input split at NUL bytes into sacctmgr associations,
//! sshare, slurm.conf and squeue texts.
#![no_main]
use fairflow_ingest::import_slurm::{import_slurm, SlurmImport, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let source = |name, text| Source { name, text };
    let assoc = source("assoc", parts.next().unwrap_or(""));
    let sshare = parts.next().map(|t| source("sshare", t));
    let slurm_conf = parts.next().map(|t| source("slurm.conf", t));
    let squeue = parts.next().map(|t| source("squeue", t));
    let _ = import_slurm(&SlurmImport {
        assoc,
        sshare,
        slurm_conf,
        squeue,
        cluster: None,
        t: 1_700_000_000,
    });
});
