//! The commit the `fairflow` binary is built from, fixed at build time
//! (`FAIRFLOW_BUILD_COMMIT`, read by `measure::commit` for `bench`'s
//! report): `git rev-parse HEAD` of the source tree, `+dirty` when a
//! tracked source file (`*.rs`, `*.toml`, `Cargo.lock`) differs from it,
//! `unknown` without git or a tree. Read at run time instead, a copied
//! binary reported whatever the tree held later. The script runs again when
//! HEAD moves (the reflog, the index) or a tracked source file changes.

use std::path::Path;
use std::process::Command;

/// The tracked files that decide `+dirty`.
const SOURCES: [&str; 3] = ["*.rs", "*.toml", "Cargo.lock"];

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    // From the tree's top: a pathspec run in this crate's directory would
    // name only this crate's files (a change in another crate was missed).
    let top = git(Path::new(&manifest), &["rev-parse", "--show-toplevel"]);
    let dir = Path::new(top.as_deref().unwrap_or(&manifest));
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    let commit = match git(dir, &["rev-parse", "HEAD"]) {
        Some(head) if !head.is_empty() => match git(dir, &status) {
            Some(changed) if !changed.is_empty() => format!("{head}+dirty"),
            _ => head,
        },
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=FAIRFLOW_BUILD_COMMIT={commit}");
    if let Some(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) {
        for file in ["HEAD", "logs/HEAD", "index"] {
            println!("cargo:rerun-if-changed={git_dir}/{file}");
        }
    }
    let mut files = vec!["ls-files", "--"];
    files.extend(SOURCES);
    if let (Some(top), Some(listed)) = (&top, git(dir, &files)) {
        for file in listed.lines() {
            println!("cargo:rerun-if-changed={top}/{file}");
        }
    }
}
