//! Every query command (`sshare`, `sprio`, `top`, `explain`) prints exactly
//! the same thing (standard output, standard error, exit status) under
//! `--engine batch` and `--engine incremental` (1 worker, and 2) and the default (`auto`), on the
//! example logs (`datasets/events/*.jsonl`) and on a `fairflow gen` log, as
//! of the last event and an hour later (`--at`); and with two processes
//! (timely's cluster mode over localhost).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/binary.rs"]
mod binary;
use binary::run;

/// Job ids submitted in a log (to `explain`), plus one that does not exist.
fn job_ids(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut ids: Vec<String> = text
        .lines()
        .filter(|l| l.contains(r#""op":"submit""#))
        .filter_map(|l| {
            let rest = &l[l.find(r#""job":""#)? + 7..];
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect();
    ids.sort();
    ids.dedup();
    // A few spread over the log keep the test short.
    let step = (ids.len() / 4).max(1);
    let mut picked: Vec<String> = ids.into_iter().step_by(step).collect();
    picked.push("no-such-job".to_string());
    picked
}

fn last_time(log: &Path) -> Option<i64> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = &l[l.find(r#""t":"#)? + 4..];
            let end = rest.find(|c: char| !c.is_ascii_digit())?;
            rest[..end].parse().ok()
        })
        .max()
}

fn check_log(log: &Path) {
    let log_arg = log.to_str().unwrap();
    let mut commands: Vec<Vec<String>> = vec![
        vec!["sshare".into()],
        vec!["sshare".into(), "--json".into()],
        vec!["sprio".into()],
        vec!["sprio".into(), "--json".into()],
        vec!["top".into()],
        vec!["top".into(), "-k".into(), "3".into(), "--json".into()],
    ];
    for id in job_ids(log) {
        commands.push(vec!["explain".into(), id]);
    }
    let mut times: Vec<Option<String>> = vec![None];
    if let Some(t) = last_time(log) {
        times.push(Some((t + 3600).to_string()));
    }
    for command in &commands {
        for at in &times {
            let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
            args.extend(["--events", log_arg]);
            if let Some(at) = at {
                args.extend(["--at", at]);
            }
            let want = run(&[args.as_slice(), &["--engine", "batch"]].concat());
            let got = run(&[
                args.as_slice(),
                &["--engine", "incremental", "--workers", "2"],
            ]
            .concat());
            assert_eq!(got, want, "{args:?} with 2 workers");
            // The incremental engine with 1 worker, and the default (`auto`,
            // which takes the batch oracle for a one-off answer).
            let one = run(&[args.as_slice(), &["--engine", "incremental"]].concat());
            assert_eq!(one, want, "{args:?} with 1 worker");
            assert_eq!(run(&args), want, "{args:?} by default");
        }
    }
}

#[test]
fn commands_print_the_same_under_both_engines_on_the_example_logs() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    assert!(!logs.is_empty());
    for log in logs {
        check_log(&log);
    }
}

#[test]
fn commands_print_the_same_under_both_engines_on_a_generated_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gen.jsonl");
    let (ok, _, err) = run(&[
        "gen",
        "--seed",
        "5",
        "--associations",
        "40",
        "--jobs",
        "80",
        "--running",
        "10",
        "--activity-secs",
        "3600",
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(ok, "gen failed: {err}");
    check_log(&log);
}

#[test]
fn ticket_and_level_based_logs_run_on_the_incremental_engine() {
    let dir = tempfile::tempdir().unwrap();
    for flags in ["TICKET_BASED", "LEVEL_BASED"] {
        let log = dir.path().join(format!("{flags}.jsonl"));
        std::fs::write(
            &log,
            [
                r#"{"op":"account","t":1700000000,"name":"a","shares":1}"#.to_string(),
                r#"{"op":"user","t":1700000000,"user":"u","account":"a","shares":1}"#.to_string(),
                r#"{"op":"submit","t":1700000050,"job":"1","user":"u","account":"a"}"#.to_string(),
                format!(r#"{{"op":"config","t":1700000100,"set":{{"PriorityFlags":"{flags}"}}}}"#),
                String::new(),
            ]
            .join("\n"),
        )
        .unwrap();
        let log = log.to_str().unwrap();
        let (ok_batch, out_batch, err_batch) =
            run(&["sshare", "--events", log, "--engine", "batch"]);
        let (ok, out, err) = run(&["sshare", "--events", log]);
        assert!(ok_batch && ok, "{flags}: {err_batch} {err}");
        assert_eq!(out, out_batch, "{flags}");
        assert_eq!(err_batch, "", "{flags}");
        // No note: the incremental engine answers itself.
        assert_eq!(err, "", "{flags}");
    }
}

#[test]
fn two_processes_answer_like_the_batch_engine() {
    let log =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/events/priority.jsonl");
    let log = log.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hostfile = dir.path().join("hosts");
    // Two free ports on localhost (bound, read, released).
    let ports: Vec<u16> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect::<Vec<_>>()
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    std::fs::write(
        &hostfile,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    let hostfile = hostfile.to_str().unwrap();
    let cluster = |process: &str| {
        Command::new(env!("CARGO_BIN_EXE_fairflow"))
            .args(["sprio", "--events", log, "-P", "--processes", "2"])
            .args(["--process", process, "--hostfile", hostfile])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let follower = cluster("1");
    let leader = cluster("0").wait_with_output().unwrap();
    let follower = follower.wait_with_output().unwrap();
    let want = run(&["sprio", "--events", log, "-P", "--engine", "batch"]);
    assert!(leader.status.success(), "{:?}", leader);
    assert!(follower.status.success(), "{:?}", follower);
    // Nothing but the answer: fairflow connects the processes itself, so
    // timely's own connection messages (`awaiting connections`, `error
    // connecting ...; retrying`) are never printed.
    assert_eq!(String::from_utf8(leader.stdout).unwrap(), want.1);
    assert!(follower.stdout.is_empty(), "{follower:?}");
}
