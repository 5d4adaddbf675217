//! The bodies of the fuzz targets, one function per target, called by the
//! `fuzz_target!` binaries in `fuzz_targets/` (under `cargo fuzz`) and by the
//! corpus replay test `tests/corpus.rs` (on the stable toolchain, every file
//! of `corpus/<target>` and `artifacts/<target>`). Each function takes any
//! bytes and must not panic; where a target checks more than "no panic" (an
//! invariant of what it read), it says so and asserts it.
//!
//! [`TARGETS`] names every target once: the replay test reads it, and a
//! binary in `Cargo.toml` without an entry here fails that test.

mod flux;
mod readers;
mod service;
mod snapshot;

pub use flux::{flux_emulate, flux_journal, import_flux};
pub use readers::{
    checkpoint_reader, events, import_slurm, jobcomp, log_reader, moab_cfg, slurm_conf, swf,
};
pub use service::{http_events, http_whatif, serve_config};
pub use snapshot::{chosen_version, framed, snapshot};

/// A fuzz target: its name (its binary's and its corpus directory's) and
/// its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    ("events", events),
    ("swf", swf),
    ("jobcomp", jobcomp),
    ("slurm_conf", slurm_conf),
    ("moab_cfg", moab_cfg),
    ("import_slurm", import_slurm),
    ("log_reader", log_reader),
    ("checkpoint_reader", checkpoint_reader),
    ("flux_journal", flux_journal),
    ("import_flux", import_flux),
    ("flux_emulate", flux_emulate),
    ("snapshot", snapshot),
    ("serve_config", serve_config),
    ("http_events", http_events),
    ("http_whatif", http_whatif),
];

/// The example event log the service targets start from
/// (`datasets/events/priority.jsonl`: a config, a cluster, QOSes, a tree,
/// usage, pending and held jobs).
const BASE_LOG: &str = include_str!("../../datasets/events/priority.jsonl");

/// A book that applied every line of `log` it accepts, and how many it
/// applied.
pub fn book_of(log: &str) -> (fairflow_book::Book, u64) {
    let mut book = fairflow_book::Book::default();
    let mut applied = 0;
    for line in fairflow_ingest::reader::read_events(log.as_bytes()).flatten() {
        if book.apply_line(line).is_ok() {
            applied += 1;
        }
    }
    (book, applied)
}
