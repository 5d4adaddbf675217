//! `fairflow replay`: feeding a log or an SWF trace through the incremental
//! engine ends in the same fair-share table and queue as the batch engine
//! answers for the same events (`fairflow sshare/top --engine batch`), and
//! the report counts what was applied and rejected.
//!
//! The SWF test replays the head of the NASA iPSC trace (its first 1,000
//! lines; `FAIRFLOW_HEAVY=1`: the whole trace) from
//! `../shared/datasets` next to the repository; it is skipped when the trace
//! is absent.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[path = "support/binary.rs"]
mod binary;
use binary::run;

/// The report's value for `name` (`name: value` lines).
fn field<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// Replay `input` with `--sshare -P` and compare with `sshare --engine batch`
/// on `log` (the same events as a log).
fn check(input: &Path, log: &Path, workers: &str) -> String {
    let (ok, out, err) = run(&[
        "replay",
        input.to_str().unwrap(),
        "--workers",
        workers,
        "--sshare",
        "--top",
        "5",
        "-P",
    ]);
    assert!(ok, "replay failed: {err}");
    let mut parts = out.split("\n\n");
    let report = parts.next().unwrap().to_string();
    let top = parts.next().unwrap();
    let table = parts.next().unwrap();
    let log = log.to_str().unwrap();
    let (ok, want_table, err) = run(&["sshare", "--events", log, "-P", "--engine", "batch"]);
    assert!(ok, "{err}");
    assert_eq!(table.trim_end(), want_table.trim_end());
    let (ok, want_top, err) = run(&["top", "-k", "5", "--events", log, "-P", "--engine", "batch"]);
    assert!(ok, "{err}");
    assert_eq!(top.trim_end(), want_top.trim_end());
    for name in ["events per second", "elapsed", "batches"] {
        field(&report, name);
    }
    assert!(
        field(&report, "update latency (ms)").starts_with("p50 "),
        "{report}"
    );
    report
}

#[test]
fn replaying_the_example_log_reports_and_ends_equal_to_the_batch_engine() {
    let log =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events/priority.jsonl");
    let report = check(&log, &log, "2");
    // Every line of the example log is an event the validator accepts.
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(field(&report, "events applied"), lines.to_string());
    assert_eq!(field(&report, "events rejected"), "0");
}

#[test]
fn replaying_the_nasa_swf_trace_ends_with_the_batch_engines_fairshare_table() {
    let Some(trace) = fairflow_testkit::dataset("NASA-iPSC-1993-3.1-cln.swf.gz") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let heavy = fairflow_testkit::heavy();
    let head = dir.path().join("nasa-head.swf");
    {
        let reader = BufReader::new(flate2::read::MultiGzDecoder::new(
            std::fs::File::open(&trace).unwrap(),
        ));
        let mut out = std::fs::File::create(&head).unwrap();
        let limit = if heavy { usize::MAX } else { 1_000 };
        for line in reader.lines().take(limit) {
            writeln!(out, "{}", line.unwrap()).unwrap();
        }
    }
    let log = dir.path().join("nasa-head.jsonl");
    let (ok, _, err) = run(&[
        "import",
        "swf",
        head.to_str().unwrap(),
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(ok, "import failed: {err}");
    let report = check(&head, &log, "1");
    let applied: u64 = field(&report, "events applied").parse().unwrap();
    assert!(applied > 1_000, "{report}");
}
