//! `fairflow demo`'s second part: the synthetic cluster through the
//! incremental engine prints its latencies and the top of the queue. (That
//! the queue's first job is the oracle's is a unit test of `demo.rs`; the
//! worked example's numbers are checked in `cli.rs`.)

use std::process::Command;

#[test]
fn the_demo_shows_the_synthetic_clusters_queue_and_latencies() {
    let out = Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .arg("demo")
        .output()
        .expect("run fairflow");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let part = &stdout[stdout
        .find("== A synthetic cluster through the incremental engine")
        .expect("the second part's title")..];
    let latency = part
        .lines()
        .find(|l| l.starts_with("Latency per batch (apply + top-10 read): p50 "))
        .expect("a latency line");
    assert!(
        latency.contains(" p99 ") && latency.contains(" max ") && latency.ends_with("events/s")
    );
    assert!(part.contains("Latency of a top-10 read alone, computed at a moved time: p50 "));
    let lines: Vec<&str> = part.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("RANK") && l.contains("JOBID") && l.contains("PRIORITY"))
        .expect("the queue header");
    // Header, dashes, then ten ranked rows 1..=10.
    let ranks: Vec<&str> = lines[header + 2..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let expected: Vec<String> = (1..=10).map(|r| r.to_string()).collect();
    assert_eq!(ranks, expected);
}
