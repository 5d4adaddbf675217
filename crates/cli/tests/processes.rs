//! Timely's cluster mode with real `fairflow` processes (issue 37, item 4):
//! two OS processes over loopback, on a generated cluster of a few hundred
//! associations and a few thousand jobs (usage, starts, ends, then holds,
//! releases, cancels and share changes added here), print byte for byte what
//! one process (`--processes 1 --engine incremental`) and the batch oracle
//! print for `top`, `sprio`, `sshare -a -l`, `explain` and `position`; their
//! `--report-layout` lines show each process holding part of the jobs and
//! user associations, adding up to the cluster's as counted here from the
//! log by hand; and a process whose peer is not there exits with a clear
//! error by `--connect-timeout`, instead of waiting for ever.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/binary.rs"]
mod binary;
#[path = "support/log_jobs.rs"]
mod log_jobs;
#[path = "support/service.rs"]
mod service;
use binary::{outcome, run, text};
use log_jobs::LogJobs;
use service::free_port;

/// A generated cluster (`fairflow gen`) with holds, releases, cancels and
/// share changes appended an hour after its last event.
fn generated_cluster(dir: &Path) -> (String, LogJobs) {
    let path = dir.join("cluster.jsonl");
    let (ok, _, err) = run(&[
        "gen",
        "--seed",
        "37",
        "--associations",
        "300",
        "--jobs",
        "3000",
        "--running",
        "300",
        "--activity-secs",
        "1800",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "gen: {err}");
    let mut log = std::fs::read_to_string(&path).unwrap();
    let before = LogJobs::of(&log);
    let t = before.last_t + 3600;
    let pending = before.pending(false);
    let mut extra = Vec::new();
    for (i, job) in pending.iter().enumerate() {
        match i % 17 {
            0 | 5 => extra.push(format!(r#"{{"op":"hold","t":{t},"job":"{job}"}}"#)),
            9 => extra.push(format!(r#"{{"op":"cancel","t":{t},"job":"{job}"}}"#)),
            _ => {}
        }
    }
    // Half the held jobs released again a minute later.
    let released = pending.iter().enumerate().filter(|(i, _)| i % 17 == 5);
    for (_, job) in released {
        extra.push(format!(
            r#"{{"op":"release","t":{},"job":"{job}"}}"#,
            t + 60
        ));
    }
    for (i, (user, account)) in before.associations.iter().enumerate().step_by(23) {
        let shares = 1 + i % 7;
        extra.push(format!(
            r#"{{"op":"user","t":{},"user":"{user}","account":"{account}","shares":{shares}}}"#,
            t + 120
        ));
    }
    for line in extra {
        log.push_str(&line);
        log.push('\n');
    }
    std::fs::write(&path, &log).unwrap();
    (path.to_str().unwrap().to_string(), LogJobs::of(&log))
}

/// A host file of two loopback ports that were free a moment ago.
fn hostfile(dir: &Path, name: &str, ports: [u16; 2]) -> String {
    let path = dir.join(name);
    let text = format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Start `fairflow args --processes 2 --process I --hostfile HOSTS`.
fn spawn_process(args: &[&str], process: &str, hosts: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .args(args)
        .args([
            "--processes",
            "2",
            "--process",
            process,
            "--hostfile",
            hosts,
        ])
        .args(["--connect-timeout", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fairflow binary starts")
}

/// `fairflow args` as two processes: process 0's output and process 1's.
fn two_processes(dir: &Path, args: &[&str]) -> (Output, Output) {
    let hosts = hostfile(dir, "hosts", [free_port(), free_port()]);
    let follower = spawn_process(args, "1", &hosts);
    let leader = spawn_process(args, "0", &hosts).wait_with_output().unwrap();
    (leader, follower.wait_with_output().unwrap())
}

/// The `key=value` fields of `fairflow layout:` lines.
fn layout_lines(stderr: &str) -> Vec<BTreeMap<String, String>> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("fairflow layout: "))
        .map(|fields| {
            fields
                .split(' ')
                .map(|field| match field.split_once('=') {
                    Some((key, value)) => (key.to_string(), value.to_string()),
                    None => (field.to_string(), String::new()),
                })
                .collect()
        })
        .collect()
}

fn number(fields: &BTreeMap<String, String>, key: &str) -> usize {
    fields[key].parse().unwrap()
}

#[test]
fn two_processes_answer_like_one_and_the_oracle_on_a_generated_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let (log, counted) = generated_cluster(dir.path());
    let active = counted.active.len();
    let held = counted.pending(true);
    assert!(active > 2_000 && !held.is_empty(), "{active} active jobs");
    // Jobs to explain and place: a pending one, a held one, a running one.
    let running = counted.running()[0].clone();
    let pending = counted.pending(false);
    let mut commands: Vec<Vec<String>> = [
        "top -k 200",
        "top -k 25 --json",
        "sprio -P",
        "sshare -a -l",
        "sshare --json",
    ]
    .iter()
    .map(|c| c.split(' ').map(String::from).collect())
    .collect();
    for job in [&pending[pending.len() / 2], &held[0], &running] {
        commands.push(vec!["explain".into(), job.clone()]);
        commands.push(vec!["position".into(), job.clone()]);
    }
    for command in &commands {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.extend(["--events", &log]);
        let oracle = run(&[args.as_slice(), &["--engine", "batch"]].concat());
        let one = run(&[args.as_slice(), &["--engine", "incremental"]].concat());
        let (leader, follower) = two_processes(dir.path(), &args);
        // `position` of a held or running job, `explain` of a running one,
        // is an error (exit 1): the same error from every layout.
        let about_a_job = ["position", "explain"].contains(&command[0].as_str());
        assert!(oracle.0 || about_a_job, "{command:?}: {}", oracle.2);
        assert!(!oracle.1.is_empty() || !oracle.2.is_empty(), "{command:?}");
        assert_eq!(one, oracle, "{command:?}: one process and the oracle");
        assert_eq!(outcome(leader), oracle, "{command:?}: two processes");
        assert!(follower.status.success(), "{command:?}: {follower:?}");
        // The other process prints nothing (timely's own connection
        // messages included: fairflow connects the processes itself).
        assert_eq!(text(&follower.stdout), "", "{command:?}");
        assert_eq!(text(&follower.stderr), "", "{command:?}");
    }

    // What each process holds.
    let args = ["top", "-k", "5", "--events", &log, "--report-layout"];
    let (leader, follower) = two_processes(dir.path(), &args);
    assert!(leader.status.success() && follower.status.success());
    let lines = layout_lines(&text(&leader.stderr));
    let driver = &lines[0];
    assert_eq!(driver["process"], "0");
    assert!(driver.contains_key("driver"), "{driver:?}");
    assert_eq!(
        number(driver, "jobs"),
        active,
        "the book holds every active job"
    );
    assert_eq!(
        number(driver, "user_associations"),
        counted.associations.len()
    );
    let shards = &lines[1..];
    assert_eq!(shards.len(), 2, "one worker in each process: {shards:?}");
    let mut jobs_by_process = [0usize; 2];
    let mut associations_by_process = [0usize; 2];
    for (worker, shard) in shards.iter().enumerate() {
        assert_eq!(number(shard, "worker"), worker);
        let process = number(shard, "process");
        assert_eq!(process, worker, "worker {worker} runs in process {worker}");
        jobs_by_process[process] += number(shard, "jobs");
        associations_by_process[process] += number(shard, "user_associations");
        assert!(number(shard, "ranked") <= number(shard, "jobs"));
        assert!(number(shard, "combinations") >= 1);
        // Each process's own peak memory, read in that process: more than
        // the binary alone, less than 2 GiB on this small cluster.
        let peak_kib = number(shard, "peak_rss_kib");
        assert!((4_096..2 << 20).contains(&peak_kib), "{shard:?}");
    }
    println!("jobs by process {jobs_by_process:?} of {active}; user associations with jobs by process {associations_by_process:?}");
    assert_eq!(jobs_by_process.iter().sum::<usize>(), active);
    for held_by in jobs_by_process {
        assert!(
            held_by > active / 10 && held_by < active * 9 / 10,
            "{jobs_by_process:?}"
        );
    }
    // A user association's jobs are all on one shard: the shards' user
    // associations are the active jobs' distinct ones, split.
    let with_jobs: BTreeSet<&(String, String)> = counted
        .active
        .values()
        .map(|job| &job.association)
        .collect();
    assert_eq!(
        associations_by_process.iter().sum::<usize>(),
        with_jobs.len()
    );
    assert!(associations_by_process.iter().all(|&n| n > 0));
    // The ranked jobs are the pending jobs that are not held (gen writes no
    // begin times in the future).
    let ranked: usize = shards.iter().map(|shard| number(shard, "ranked")).sum();
    assert_eq!(ranked, counted.pending(false).len());
    assert_eq!(text(&follower.stderr), "");
}

/// Run `child` to its end, or kill it `limit` after `started` (the test
/// then fails); its output and when it ended, since `started`.
fn wait_at_most(
    mut child: std::process::Child,
    started: Instant,
    limit: Duration,
) -> (Output, Duration) {
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "still running after {limit:?}: {:?}",
                child.wait_with_output()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_process_whose_peer_is_not_there_exits_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let log = binary::dataset("events/priority.jsonl");
    let [leader_port, follower_port, wrong_port] = [free_port(), free_port(), free_port()];
    // Process 0 waits for a process 1 that connects elsewhere: process 1's
    // host file names a wrong port for process 0.
    let leader_hosts = hostfile(dir.path(), "leader", [leader_port, follower_port]);
    let follower_hosts = hostfile(dir.path(), "follower", [wrong_port, follower_port]);
    let start = |process: &str, hosts: &str| {
        Command::new(env!("CARGO_BIN_EXE_fairflow"))
            .args(["sprio", "--events", &log, "--processes", "2"])
            .args(["--process", process, "--hostfile", hosts])
            .args(["--connect-timeout", "2"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    let leader = start("0", &leader_hosts);
    let follower = start("1", &follower_hosts);
    let limit = Duration::from_secs(60);
    let (leader, leader_took) = wait_at_most(leader, started, limit);
    let (follower, follower_took) = wait_at_most(follower, started, limit);
    println!("process 0 gave up after {leader_took:?}, process 1 after {follower_took:?}");
    assert_eq!(leader.status.code(), Some(1));
    assert_eq!(follower.status.code(), Some(1));
    assert_eq!(text(&leader.stdout), "");
    assert_eq!(text(&follower.stdout), "");
    let leader_error = text(&leader.stderr);
    assert!(
        leader_error.contains(&format!(
            "process 0, listening on 127.0.0.1:{leader_port}, heard nothing from process 1 (127.0.0.1:{follower_port}) within 2 s"
        )),
        "{leader_error}"
    );
    let follower_error = text(&follower.stderr);
    assert!(
        follower_error.contains(&format!(
            "process 1 could not reach process 0 at 127.0.0.1:{wrong_port} within 2 s"
        )),
        "{follower_error}"
    );
    // Given up at the deadline, not long after it.
    for took in [leader_took, follower_took] {
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(30),
            "{took:?}"
        );
    }
}
