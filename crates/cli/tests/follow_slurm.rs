//! `fairflow import slurm --live` and `fairflow serve --follow-slurm` with
//! stand-in Slurm commands on `PATH`: shell scripts that print the files of
//! a scenario directory the test rewrites (the real commands' formats, as
//! Slurm 22.05 prints them; `real_slurm.rs` runs the real ones). The
//! follower is killed (`kill -9`) between polls and in the middle of one,
//! and must neither lose nor double a job or a charge.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use binary::{dataset, run};
use service::{token_file, Service};

/// Write the stand-in `sacctmgr`, `scontrol`, `squeue` and `sshare` into
/// `bin`: each prints the scenario file its arguments name (a file
/// `NAME.hang` makes it hang, `NAME.fail` fail), and writes its command
/// line to the scenario's `calls.log`.
fn stand_ins(bin: &Path, scenario: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    let scenario = scenario.display();
    let pick = [
        ("sacctmgr", "case \"$*\" in *qos*) f=qos ;; *) f=assoc ;; esac"),
        (
            "scontrol",
            "case \"$*\" in *config*) f=config ;; *partition*) f=partitions ;; *assoc_mgr*) f=usage ;; *) f=nodes ;; esac",
        ),
        ("squeue", "case \"$*\" in *RUNNING*) f=jobs ;; *) f=squeue ;; esac"),
        ("sshare", "f=sshare"),
        ("sacct", "f=sacct"),
    ];
    for (name, choose) in pick {
        let script = format!(
            "#!/bin/sh\n{choose}\nd={scenario}\necho \"{name} $*\" >> \"$d/calls.log\"\n\
             [ -e \"$d/$f.hang\" ] && sleep 30\n\
             [ -e \"$d/$f.fail\" ] && {{ echo \"{name}: error: Unable to contact slurm controller\" >&2; exit 1; }}\n\
             exec cat \"$d/$f.txt\"\n"
        );
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn events_only(log: &str) -> Vec<&str> {
    log.lines().filter(|l| !l.starts_with('#')).collect()
}

#[test]
fn the_live_import_equals_the_import_of_the_same_outputs_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario");
    std::fs::create_dir_all(&scenario).unwrap();
    for (file, site) in [
        ("assoc", "assoc.txt"),
        ("qos", "qos.txt"),
        ("config", "config.txt"),
        ("nodes", "nodes.txt"),
        ("squeue", "squeue.txt"),
        ("sshare", "sshare.txt"),
    ] {
        std::fs::copy(
            dataset(&format!("slurm/site/{site}")),
            scenario.join(format!("{file}.txt")),
        )
        .unwrap();
    }
    let bin = dir.path().join("bin");
    stand_ins(&bin, &scenario);
    let s = |f: &str| dataset(&format!("slurm/site/{f}"));
    let (ok, from_files, err) = run(&[
        "import",
        "slurm",
        "--assoc",
        &s("assoc.txt"),
        "--sshare",
        &s("sshare.txt"),
        "--slurm-conf",
        &s("config.txt"),
        "--nodes",
        &s("nodes.txt"),
        "--qos",
        &s("qos.txt"),
        "--squeue",
        &s("squeue.txt"),
        "--time",
        "2026-11-24T12:00:00",
    ]);
    assert!(ok, "{err}");
    let live = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .env("PATH", path_with(&bin))
        .args(["import", "slurm", "--live", "--time", "2026-11-24T12:00:00"])
        .output()
        .unwrap();
    assert!(
        live.status.success(),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    let live = String::from_utf8(live.stdout).unwrap();
    assert!(events_only(&live).len() > 10, "{live}");
    assert_eq!(events_only(&live), events_only(&from_files));

    // A command that fails stops the import, naming it.
    std::fs::write(scenario.join("sshare.fail"), "").unwrap();
    let failed = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .env("PATH", path_with(&bin))
        .args(["import", "slurm", "--live"])
        .output()
        .unwrap();
    assert!(!failed.status.success());
    let said = String::from_utf8_lossy(&failed.stderr);
    assert!(
        said.contains("`sshare -a -l -P`: exited with exit status: 1: sshare: error: Unable to contact slurm controller"),
        "{said}"
    );
}

/// The scenario of the follower: a tree `a` with users u1 and u2, one QOS,
/// one partition, a 64-CPU node, Fair Tree with the fair-share weight only.
fn write_site(scenario: &Path) {
    let files = [
        ("assoc", "c|root||1|\nc|a||1|root\nc|a|u1|1|\nc|a|u2|1|\n"),
        ("qos", "Name|Priority|UsageFactor\nnormal|0|1.000000\n"),
        (
            "config",
            "PriorityDecayHalfLife   = 7-00:00:00\nPriorityCalcPeriod      = 00:05:00\n\
             PriorityFlags           = \nPriorityWeightFairShare = 10000\nPriorityWeightAge       = 0\n",
        ),
        ("nodes", "NodeName=n1 CPUTot=64 RealMemory=1000 State=IDLE\n"),
        ("partitions", "PartitionName=p1 PriorityJobFactor=1 PriorityTier=1 MaxTime=UNLIMITED State=UP\n"),
        ("usage", &usage("0.00", "0.00")),
        ("sacct", ""),
    ];
    for (name, text) in files {
        std::fs::write(scenario.join(format!("{name}.txt")), text).unwrap();
    }
}

fn usage(u1: &str, u2: &str) -> String {
    let sum = u1.parse::<f64>().unwrap() + u2.parse::<f64>().unwrap();
    format!(
        "ClusterName=c Account=root UserName= Partition=\n    UsageRaw/Norm/Efctv={sum:.2}/1.00/1.00\n\
         ClusterName=c Account=a UserName= Partition=\n    UsageRaw/Norm/Efctv={sum:.2}/1.00/1.00\n\
         ClusterName=c Account=a UserName=u1(1001) Partition=\n    UsageRaw/Norm/Efctv={u1}/0.00/0.00\n\
         ClusterName=c Account=a UserName=u2(1002) Partition=\n    UsageRaw/Norm/Efctv={u2}/0.00/0.00\n"
    )
}

/// A squeue line of the follower's format.
fn job(id: &str, user: &str, state: &str, reason: &str) -> String {
    format!("{id}|{user}|a|p1|normal|2026-11-28T10:00:00|4|1|1:00:00|2026-11-28T10:00:00|{state}|{reason}|0|N/A\n")
}

fn jobs(scenario: &Path, lines: &[String]) {
    std::fs::write(scenario.join("jobs.txt"), lines.concat()).unwrap();
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn top(service: &Service) -> Vec<String> {
    let (status, body) = service.request("GET", "/v1/top?format=parsable", None, "");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .skip(1)
        .filter_map(|l| l.split('|').nth(1))
        .map(str::to_string)
        .collect()
}

fn start(dir: &Path, bin: &Path) -> Service {
    Service::start_with_env(
        &dir.join("data"),
        &token_file(dir, "follow-slurm-token"),
        &[
            "--follow-slurm",
            "--slurm-poll-secs",
            "1",
            "--slurm-command-timeout-secs",
            "2",
        ],
        None,
        &[("PATH", path_with(bin)), ("TZ", "UTC".to_string())],
    )
}

#[test]
fn the_follower_applies_changes_survives_bad_answers_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let scenario: PathBuf = dir.path().join("scenario");
    std::fs::create_dir_all(&scenario).unwrap();
    write_site(&scenario);
    jobs(
        &scenario,
        &[
            job("1", "u1", "PENDING", "Priority"),
            job("2", "u2", "RUNNING", "None"),
        ],
    );
    let bin = dir.path().join("bin");
    stand_ins(&bin, &scenario);
    let service = start(dir.path(), &bin);
    wait_until("job 1 in the queue", || top(&service) == ["1"]);

    // An unreadable answer: the poll changes nothing, even what else changed.
    let polls = service.metric("fairflow_slurm_poll_failures_total");
    jobs(
        &scenario,
        &[
            job("3", "u1", "PENDING", "Priority"),
            "garbage\n".to_string(),
        ],
    );
    wait_until("a failed poll", || {
        service.metric("fairflow_slurm_poll_failures_total") > polls
    });
    assert_eq!(top(&service), ["1"]);
    // A command that hangs is killed after its timeout, and changes nothing.
    std::fs::write(scenario.join("jobs.hang"), "").unwrap();
    jobs(&scenario, &[job("3", "u1", "PENDING", "Priority")]);
    let failed = service.metric("fairflow_slurm_poll_failures_total");
    wait_until("a hung poll", || {
        service.metric("fairflow_slurm_poll_failures_total") > failed
    });
    assert_eq!(top(&service), ["1"]);
    std::fs::remove_file(scenario.join("jobs.hang")).unwrap();

    // Job 1 held, 2 ended, 3 submitted; u1 has used 1000 TRES-seconds.
    std::fs::write(scenario.join("usage.txt"), usage("1000.00", "0.00")).unwrap();
    jobs(
        &scenario,
        &[
            job("1", "u1", "PENDING", "JobHeldUser"),
            job("3", "u2", "PENDING", "Priority"),
        ],
    );
    wait_until("job 3 alone in the queue", || top(&service) == ["3"]);
    wait_until("u1's usage", || {
        let (_, sshare) = service.request("GET", "/v1/sshare?format=parsable&users=u1", None, "");
        sshare
            .lines()
            .any(|l| l.starts_with("a|u1|") && l.split('|').nth(4) == Some("1000"))
    });
    assert!(service.metric("fairflow_slurm_last_good_poll_age_seconds") >= 0.0);
    assert!(service.metric("fairflow_slurm_usage_reconciliations_total") >= 1.0);

    // fairflow stops; meanwhile job 1 is released and starts, 3 is cancelled,
    // 4 is submitted. The start's full comparison repairs the gap.
    service.terminate();
    jobs(
        &scenario,
        &[
            job("1", "u1", "RUNNING", "None"),
            job("4", "u2", "PENDING", "Priority"),
        ],
    );
    let service = start(dir.path(), &bin);
    wait_until("job 4 alone in the queue", || top(&service) == ["4"]);
    let (_, phases) = service.request("GET", "/slurm/v0.0.46/jobs", None, "");
    assert!(!phases.contains("\"name\": \"3\""), "{phases}");
    service.terminate();
}

/// Unix seconds now.
fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `t` as Slurm prints it in UTC (the service runs with `TZ=UTC`).
fn utc(t: i64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{t}"), "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A squeue line of a job of `user` submitted at `submitted`, running since
/// `started` (4 CPUs, 1 node).
fn running(id: &str, user: &str, submitted: i64, started: i64) -> String {
    format!(
        "{id}|{user}|a|p1|normal|{}|4|1|1:00:00|{}|RUNNING|None|0|{}\n",
        utc(submitted),
        utc(submitted),
        utc(started)
    )
}

/// A sacct line (`-P`, the follower's fields) of a finished job.
fn finished(id: &str, user: &str, submitted: i64, started: i64, ended: i64) -> String {
    format!(
        "{id}|{user}|a|p1|normal|{}|{}|{}|COMPLETED|4|1|01:00:00\n",
        utc(submitted),
        utc(started),
        utc(ended)
    )
}

/// Does fairflow hold job `id` running (its position says so)?
fn running_now(service: &Service, id: &str) -> bool {
    let (_, said) = service.request("GET", &format!("/v1/jobs/{id}/position"), None, "");
    said.contains("it is running")
}

/// fairflow's RawUsage of `user` in account `a` (sshare's fifth column).
fn raw_usage(service: &Service, user: &str) -> Option<u64> {
    let (_, sshare) = service.request(
        "GET",
        &format!("/v1/sshare?format=parsable&users={user}"),
        None,
        "",
    );
    sshare
        .lines()
        .find(|l| l.starts_with(&format!("a|{user}|")))
        .and_then(|l| l.split('|').nth(4)?.parse().ok())
}

/// The scenario of the kill tests in `dir`: the site of [`write_site`]
/// without decay (each charge stays as charged) and with Slurm's own usage
/// 1000 for u1 and 0 for u2 (reconciled once, at the first poll).
fn charging_site(dir: &Path) -> PathBuf {
    let scenario = dir.join("scenario");
    std::fs::create_dir_all(&scenario).unwrap();
    write_site(&scenario);
    std::fs::write(
        scenario.join("config.txt"),
        "PriorityDecayHalfLife   = 00:00:00\nPriorityCalcPeriod      = 00:05:00\n\
         PriorityFlags           = \nPriorityWeightFairShare = 10000\nPriorityWeightAge       = 0\n",
    )
    .unwrap();
    std::fs::write(scenario.join("usage.txt"), usage("1000.00", "0.00")).unwrap();
    scenario
}

/// Kill -9 between polls and in the middle of one: the finished jobs are
/// charged from their sacct start to their sacct end, once. Usage does not
/// decay (`PriorityDecayHalfLife = 0`) and Slurm's own usage does not move
/// (no decay pass ran: no reconciliation after the first), so each charge
/// is 4 CPUs times the seconds Slurm gives, by hand.
#[test]
fn a_kill_between_or_during_polls_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = charging_site(dir.path());
    jobs(&scenario, &[job("2", "u2", "PENDING", "Priority")]);
    let bin = dir.path().join("bin");
    stand_ins(&bin, &scenario);
    let service = start(dir.path(), &bin);
    wait_until("the first poll's usage", || {
        raw_usage(&service, "u1") == Some(1000)
    });
    assert_eq!(top(&service), ["2"]);

    // Killed between polls; meanwhile job 1 of u1 starts (after anything
    // fairflow applied, so its start is applied at Slurm's time).
    service.kill();
    let started = now_secs() + 1;
    std::thread::sleep(Duration::from_secs(2));
    jobs(
        &scenario,
        &[
            running("1", "u1", started - 1, started),
            job("2", "u2", "PENDING", "Priority"),
        ],
    );
    let service = start(dir.path(), &bin);
    wait_until("job 1 running", || running_now(&service, "1"));

    // Killed in the middle of a poll (squeue hangs); meanwhile job 1 ends,
    // and job 5 of u2 is submitted, runs 2 s and ends, never listed.
    std::fs::write(scenario.join("jobs.hang"), "").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    service.kill();
    let ended = now_secs() + 1;
    std::thread::sleep(Duration::from_secs(4));
    std::fs::write(
        scenario.join("sacct.txt"),
        finished("1", "u1", started - 1, started, ended)
            + &finished("5", "u2", ended, ended, ended + 2),
    )
    .unwrap();
    jobs(&scenario, &[job("2", "u2", "PENDING", "Priority")]);
    std::fs::remove_file(scenario.join("jobs.hang")).unwrap();
    let service = start(dir.path(), &bin);
    let u1 = 1000 + 4 * (ended - started) as u64;
    wait_until("the finished jobs charged", || {
        raw_usage(&service, "u1") == Some(u1) && raw_usage(&service, "u2") == Some(8)
    });

    // Polls go on (sacct still lists both jobs) and a restart replays the
    // log: nothing is charged again.
    let polls = service.metric("fairflow_slurm_polls_total");
    wait_until("three more polls", || {
        service.metric("fairflow_slurm_polls_total") >= polls + 3.0
    });
    service.kill();
    let service = start(dir.path(), &bin);
    let polls = service.metric("fairflow_slurm_polls_total");
    wait_until("three polls after the restart", || {
        service.metric("fairflow_slurm_polls_total") >= polls + 3.0
    });
    assert_eq!(raw_usage(&service, "u1"), Some(u1));
    assert_eq!(raw_usage(&service, "u2"), Some(8));
    assert_eq!(top(&service), ["2"]);
    assert!(!running_now(&service, "1"));
    service.terminate();
}

/// A logged event: its record's index in the log, its op and its job.
type LoggedEvent = (usize, String, Option<String>);

/// Every logged event's op and job (`None` for events without one), in log
/// order, each with its record's index, and the index of the last follower
/// cursor record (`#tap follow-slurm`), read from the data directory's log
/// segments as they are on disk (frames `[len: u32 LE][crc: u32 LE]
/// [payload]`, `crates/store/src/wal.rs`; a torn last frame ends the read).
fn logged(data: &Path) -> (Vec<LoggedEvent>, Option<usize>) {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(data.join("log"))
        .map(|dir| dir.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    segments.retain(|p| p.extension().is_some_and(|e| e == "wal"));
    segments.sort();
    let mut ops = Vec::new();
    let mut cursor = None;
    let mut index = 0;
    for segment in segments {
        let bytes = std::fs::read(segment).unwrap_or_default();
        let mut offset = 0;
        while let Some(header) = bytes.get(offset..offset + 8) {
            let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
            let Some(payload) = bytes.get(offset + 8..offset + 8 + len) else {
                break;
            };
            offset += 8 + len;
            index += 1;
            if payload.starts_with(b"#tap follow-slurm ") {
                cursor = Some(index);
            }
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(payload) else {
                continue;
            };
            let op = event["op"].as_str().unwrap_or("").to_string();
            let job = event["job"].as_str().map(str::to_string);
            ops.push((index, op, job));
        }
    }
    (ops, cursor)
}

/// A poll too large for one write is written in several (`--slurm-write-events
/// 2`), its cursor with the last: killed (`kill -9`) after some of its
/// writes are on disk and before its cursor, the service restarts, compares
/// with its own jobs and applies the rest, each job once. Meanwhile the
/// running jobs of the interrupted poll finish: each is charged once, 4 CPUs
/// from its start to its end (no decay, no reconciliation after the first
/// poll), by hand.
#[test]
fn a_kill_inside_a_poll_written_in_several_writes_loses_and_doubles_nothing() {
    const PENDING: usize = 2000;
    const RUNNING: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let scenario = charging_site(dir.path());
    jobs(&scenario, &[job("1", "u2", "PENDING", "Priority")]);
    let bin = dir.path().join("bin");
    stand_ins(&bin, &scenario);
    let start_small_writes = || {
        Service::start_with_env(
            &data,
            &token_file(dir.path(), "follow-slurm-token"),
            &[
                "--follow-slurm",
                "--slurm-poll-secs",
                "1",
                "--slurm-command-timeout-secs",
                "5",
                "--slurm-write-events",
                "2",
            ],
            None,
            &[("PATH", path_with(&bin)), ("TZ", "UTC".to_string())],
        )
    };
    let service = start_small_writes();
    wait_until("the first poll", || {
        raw_usage(&service, "u1") == Some(1000) && top(&service) == ["1"]
    });
    service.kill();

    // While it is down, 2,000 jobs are submitted and 10 of u1's start.
    std::thread::sleep(Duration::from_secs(2));
    let started = now_secs() + 1;
    std::thread::sleep(Duration::from_secs(2));
    let pending_ids: Vec<String> = (1000..1000 + PENDING).map(|i| i.to_string()).collect();
    let running_ids: Vec<String> = (100..100 + RUNNING).map(|i| i.to_string()).collect();
    let mut lines = vec![job("1", "u2", "PENDING", "Priority")];
    for (i, id) in pending_ids.iter().enumerate() {
        let user = if i % 2 == 0 { "u1" } else { "u2" };
        lines.push(job(id, user, "PENDING", "Priority"));
    }
    for id in &running_ids {
        lines.push(running(id, "u1", started - 1, started));
    }
    jobs(&scenario, &lines);
    let service = start_small_writes();
    let is_new = |job: &Option<String>| {
        job.as_deref()
            .is_some_and(|j| j.parse::<usize>().is_ok_and(|n| n >= 100))
    };
    let watch = Instant::now();
    loop {
        let (ops, _) = logged(&data);
        if ops
            .iter()
            .filter(|(_, op, job)| op == "submit" && is_new(job))
            .count()
            >= 20
        {
            break;
        }
        assert!(
            watch.elapsed() < Duration::from_secs(30),
            "no write of the poll"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    service.kill();
    let (ops, cursor) = logged(&data);
    let new_submits: Vec<usize> = ops
        .iter()
        .filter(|(_, op, job)| op == "submit" && is_new(job))
        .map(|(offset, _, _)| *offset)
        .collect();
    assert!(
        new_submits.len() < PENDING + RUNNING && cursor < new_submits.first().copied(),
        "the kill did not land inside the poll's writes: {} of {} submits logged, cursor at {cursor:?}",
        new_submits.len(),
        PENDING + RUNNING
    );

    // While it is down again, the running jobs end (sacct lists them).
    std::thread::sleep(Duration::from_secs(1));
    let ended = now_secs() + 1;
    std::thread::sleep(Duration::from_secs(2));
    let sacct: String = running_ids
        .iter()
        .map(|id| finished(id, "u1", started - 1, started, ended))
        .collect();
    std::fs::write(scenario.join("sacct.txt"), sacct).unwrap();
    lines.truncate(1 + PENDING);
    jobs(&scenario, &lines);
    let service = start_small_writes();
    let u1 = 1000 + (RUNNING as i64 * 4 * (ended - started)) as u64;
    wait_until("every job applied and the finished ones charged", || {
        let (status, body) = service.request("GET", "/v1/top?k=5000&format=parsable", None, "");
        status == 200
            && body.lines().count() == 1 + 1 + PENDING
            && raw_usage(&service, "u1") == Some(u1)
    });
    assert_eq!(raw_usage(&service, "u2"), Some(0));
    let (status, body) = service.request("GET", "/v1/top?k=5000&format=parsable", None, "");
    assert_eq!(status, 200, "{body}");
    let mut listed: Vec<String> = body
        .lines()
        .skip(1)
        .filter_map(|l| Some(l.split('|').nth(1)?.to_string()))
        .collect();
    listed.sort();
    let mut expected: Vec<String> = pending_ids.clone();
    expected.push("1".to_string());
    expected.sort();
    assert_eq!(listed, expected);

    // The log holds each job's submit once, and each running job's start
    // and end once (read before the service stops: a clean stop
    // checkpoints and may drop the log's segments).
    let (ops, _) = logged(&data);
    let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for (_, op, job) in ops {
        if let Some(job) = job {
            *counts.entry((op, job)).or_default() += 1;
        }
    }
    for id in pending_ids.iter().chain(&running_ids) {
        assert_eq!(
            counts.get(&("submit".into(), id.clone())),
            Some(&1),
            "job {id}"
        );
    }
    for id in &running_ids {
        assert!(
            counts.get(&("start".into(), id.clone())) <= Some(&1),
            "job {id}"
        );
        assert_eq!(
            counts.get(&("end".into(), id.clone())),
            Some(&1),
            "job {id}"
        );
    }
    service.terminate();
}

/// The command lines the stand-ins ran of squeue and sacct, from the
/// scenario's `calls.log`, emptied.
fn job_calls(scenario: &Path) -> Vec<String> {
    let log = scenario.join("calls.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::write(&log, "").unwrap();
    (text.lines())
        .filter(|l| matches!(l.split(' ').next(), Some("squeue" | "sacct")))
        .map(str::to_string)
        .collect()
}

/// `GET path`'s JSON answer, or `None` unless it is 200.
fn json_of(service: &Service, path: &str) -> Option<serde_json::Value> {
    let (status, body) = service.request("GET", path, None, "");
    (status == 200).then(|| serde_json::from_str(&body).unwrap())
}

/// A Slurm 22.05 cluster is asked for no SLUID; after an upgrade to 26.05
/// (`SLURM_VERSION` in `scontrol show config`) the next polls ask squeue
/// for `Sluid` and sacct for `OriginalSLUID`, the pending job gains its
/// SLUID without being submitted again, a new job comes with its own, and
/// either key finds each. A malformed SLUID fails the poll and changes
/// nothing.
#[test]
fn after_an_upgrade_to_26_05_a_sluid_finds_the_job_as_its_id_does() {
    let dir = tempfile::tempdir().unwrap();
    let scenario: PathBuf = dir.path().join("scenario");
    std::fs::create_dir_all(&scenario).unwrap();
    write_site(&scenario);
    let config = std::fs::read_to_string(scenario.join("config.txt")).unwrap();
    let version = |v: &str| {
        let text = format!("{config}SLURM_VERSION           = {v}\n");
        std::fs::write(scenario.join("config.txt"), text).unwrap();
    };
    version("22.05.8");
    jobs(&scenario, &[job("1", "u1", "PENDING", "Priority")]);
    let bin = dir.path().join("bin");
    stand_ins(&bin, &scenario);
    let service = start(dir.path(), &bin);
    wait_until("job 1 in the queue", || top(&service) == ["1"]);
    wait_until("a poll asking sacct", || {
        std::fs::read_to_string(scenario.join("calls.log"))
            .unwrap_or_default()
            .contains("\nsacct ")
    });
    let asked = job_calls(&scenario);
    assert!(asked.iter().any(|l| l.starts_with("sacct")), "{asked:?}");
    assert!(
        asked.iter().all(|l| !l.to_lowercase().contains("sluid")),
        "{asked:?}"
    );
    let failures = service.metric("fairflow_slurm_poll_failures_total");

    // The upgrade: each line gains its SLUID (job 1's line changes).
    let (one, two) = ("s00DKDVDNA0005", "s00DKDVDNA0006");
    version("26.05.0");
    let keyed = |line: String, sluid: &str| format!("{}|{sluid}\n", line.trim_end());
    jobs(
        &scenario,
        &[
            keyed(job("1", "u1", "PENDING", "Priority"), one),
            keyed(job("2", "u2", "PENDING", "Priority"), two),
        ],
    );
    wait_until("job 1 found by its SLUID", || {
        json_of(&service, &format!("/v1/jobs/{one}/position")).is_some()
    });
    assert_eq!(top(&service), ["1", "2"]);
    let place = json_of(&service, &format!("/v1/jobs/{one}/position")).unwrap();
    assert_eq!(place["job"]["job_id"], "1");
    assert_eq!(place["job"]["sluid"], one);
    for key in ["2", two, "S00dkdvdnaoOO6"] {
        let why = json_of(&service, &format!("/v1/jobs/{key}/explain")).unwrap();
        assert_eq!(
            (why["job_id"].as_str(), why["sluid"].as_str()),
            (Some("2"), Some(two))
        );
    }
    let (_, sprio) = service.request(
        "GET",
        &format!("/v1/sprio?format=parsable&jobs={two}"),
        None,
        "",
    );
    let rows: Vec<&str> = sprio.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{sprio}");
    assert!(rows[0].starts_with("2|"), "{sprio}");
    let asked = job_calls(&scenario);
    assert!(
        asked
            .iter()
            .any(|l| l.starts_with("squeue") && l.ends_with("StartTime:|,Sluid")),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .any(|l| l.starts_with("sacct") && l.contains("Timelimit,OriginalSLUID")),
        "{asked:?}"
    );
    assert_eq!(
        service.metric("fairflow_slurm_poll_failures_total"),
        failures
    );

    // A malformed SLUID (`U` is not base 32): the poll fails, job 3 is not
    // submitted and job 2 keeps its SLUID.
    jobs(
        &scenario,
        &[
            keyed(job("1", "u1", "PENDING", "Priority"), one),
            keyed(job("2", "u2", "PENDING", "Priority"), two),
            keyed(job("3", "u1", "PENDING", "Priority"), "s00DKDVDNU0007"),
        ],
    );
    wait_until("a failed poll", || {
        service.metric("fairflow_slurm_poll_failures_total") > failures
    });
    assert_eq!(top(&service), ["1", "2"]);
    assert!(json_of(&service, &format!("/v1/jobs/{two}/position")).is_some());
    service.terminate();
}
