//! `fairflow gen` writes the same valid log for the same seed; `fairflow import
//! swf` turns a trace into a log the other commands read without rejection,
//! and the usage it implies is the trace's processor-seconds.

#[path = "support/binary.rs"]
mod binary;
use binary::run_with_input;

#[test]
fn gen_is_deterministic_and_valid() {
    let args = [
        "gen",
        "--seed",
        "3",
        "--associations",
        "50",
        "--jobs",
        "100",
        "--running",
        "10",
        "--activity-secs",
        "600",
        "--reorganise",
        "5",
    ];
    let (ok, first, _) = run_with_input(&args, None);
    assert!(ok);
    let (_, second, _) = run_with_input(&args, None);
    assert_eq!(first, second);
    let (_, other_seed, _) = run_with_input(
        &[
            "gen",
            "--seed",
            "4",
            "--associations",
            "50",
            "--jobs",
            "100",
        ],
        None,
    );
    assert_ne!(first, other_seed);
    let (ok, table, errors) =
        run_with_input(&["sshare", "-P", "--events", "-"], Some(first.as_bytes()));
    assert!(ok, "{errors}");
    assert!(
        errors.is_empty(),
        "the generated log had rejections: {errors}"
    );
    // root, the accounts and 50 user associations, plus the header.
    assert_eq!(
        table
            .lines()
            .filter(|l| l.split('|').nth(1).is_some_and(|u| !u.is_empty()))
            .count(),
        51
    );
    assert!(!run_with_input(&["gen", "--depth", "1"], None).0);
}

#[test]
fn an_swf_trace_imports_into_a_log_with_its_usage() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/swf/tiny.swf");
    let (ok, log, errors) = run_with_input(&["import", "swf", trace], None);
    assert!(ok, "{errors}");
    // Job 3 has an unknown run time: it is cancelled and charges nothing.
    assert!(log.contains(r#""op":"cancel""#));
    let (ok, table, errors) =
        run_with_input(&["sshare", "-P", "--events", "-"], Some(log.as_bytes()));
    assert!(ok && errors.is_empty(), "{errors}");
    // Without a config event the default half-life (7 days) decays usage a
    // little, so compare the undecayed totals through a no-decay slurm.conf.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    std::fs::write(&conf, "PriorityDecayHalfLife=0\n").unwrap();
    let (_, table_no_decay, _) = run_with_input(
        &[
            "sshare",
            "-P",
            "--slurm-conf",
            conf.to_str().unwrap(),
            "--events",
            "-",
        ],
        Some(log.as_bytes()),
    );
    let raw = |account: &str| -> u64 {
        table_no_decay
            .lines()
            .find(|l| l.split('|').next() == Some(account) && l.split('|').nth(1) == Some(""))
            .and_then(|l| l.split('|').nth(4))
            .unwrap()
            .parse()
            .unwrap()
    };
    // g7: job 1, 4 procs x 100 s, and job 2, 2 procs x 50 s = 500. g8: job 4, 8 x 30 = 240.
    assert_eq!(raw("g7"), 500);
    assert_eq!(raw("g8"), 240);
    assert_eq!(raw("root"), 740);
    assert!(table.contains("g7|u3|"));
}
