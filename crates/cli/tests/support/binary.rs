//! Running the built `fairflow` binary on the fixtures of `datasets/`. Each
//! test binary uses a part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A file of the repository's `datasets/`, as a command-line argument.
pub fn dataset(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    root.join(path).to_str().unwrap().to_string()
}

/// Run `fairflow args` (standard input empty) and collect its output.
pub fn fairflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .args(args)
        .output()
        .expect("the fairflow binary runs")
}

/// Run `fairflow args` with `input` on its standard input.
pub fn fairflow_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fairflow binary runs");
    // A command that refuses its arguments exits without reading its input:
    // the pipe is then closed, which is not the test's failure.
    match child.stdin.take().unwrap().write_all(input) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written.unwrap(),
    }
    child.wait_with_output().unwrap()
}

/// Bytes of an output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Did it succeed, and its standard output and standard error.
pub fn outcome(output: Output) -> (bool, String, String) {
    (
        output.status.success(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// Run `fairflow args`: did it succeed, its standard output and error.
pub fn run(args: &[&str]) -> (bool, String, String) {
    outcome(fairflow(args))
}

/// As [`run`], with `input` (if any) on its standard input.
pub fn run_with_input(args: &[&str], input: Option<&[u8]>) -> (bool, String, String) {
    match input {
        Some(input) => outcome(fairflow_with_input(args, input)),
        None => run(args),
    }
}
