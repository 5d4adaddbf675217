//! Corpus replay on the stable toolchain: every file of `corpus/<target>`
//! and `artifacts/<target>` (where present) through its target's function
//! (`fairflow_fuzz::TARGETS`), failing on a panic and naming the file. Also
//! checks that the targets, their binaries in `Cargo.toml` and their corpus
//! directories agree, so a target added without seeds or a binary fails here.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use fairflow_fuzz::TARGETS;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir`, sorted; none when it does not exist.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_and_artifact_file_runs_through_its_target_without_a_panic() {
    let mut failures = Vec::new();
    let mut replayed = 0usize;
    for (name, target) in TARGETS {
        for kind in ["corpus", "artifacts"] {
            for file in files_in(&fuzz_dir().join(kind).join(name)) {
                let bytes = std::fs::read(&file).expect("reading a corpus file");
                if catch_unwind(AssertUnwindSafe(|| target(&bytes))).is_err() {
                    failures.push(format!("{name}: {} panics", file.display()));
                }
                replayed += 1;
            }
        }
    }
    println!(
        "replayed {replayed} files through {} targets",
        TARGETS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_binary_and_seeds_and_every_corpus_a_target() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("Cargo.toml");
    let binaries: Vec<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|section| section.lines().find_map(|l| l.strip_prefix("name = ")))
        .map(|name| name.trim_matches('"'))
        .collect();
    let names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        binaries, names,
        "Cargo.toml's [[bin]]s are TARGETS, in order"
    );
    for name in &names {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&source).expect("the target's binary source");
        assert!(
            text.contains(&format!("fairflow_fuzz::{name}(data)")),
            "{} calls fairflow_fuzz::{name}",
            source.display()
        );
        assert!(
            !files_in(&fuzz_dir().join("corpus").join(name)).is_empty(),
            "corpus/{name} holds seeds"
        );
    }
    for dir in std::fs::read_dir(fuzz_dir().join("corpus")).expect("corpus/") {
        let dir = dir.expect("an entry").file_name();
        let dir = dir.to_string_lossy();
        assert!(names.contains(&dir.as_ref()), "corpus/{dir} has a target");
    }
}

#[test]
fn the_snapshot_seeds_are_snapshots_this_build_reads() {
    let dir = fuzz_dir().join("corpus/snapshot");
    let mut seeds = 0;
    for file in files_in(&dir) {
        let bytes = std::fs::read(&file).expect("a seed");
        let (&choice, body) = bytes.split_first().expect("a seed is not empty");
        let framed = fairflow_fuzz::framed(fairflow_fuzz::chosen_version(choice), body);
        assert!(
            fairflow_book::snapshot::decode(&framed).is_ok(),
            "{} decodes (else: cargo run --release --example snapshot_seeds)",
            file.display()
        );
        seeds += 1;
    }
    assert!(seeds >= 4, "the four example logs' snapshots are seeds");
}
