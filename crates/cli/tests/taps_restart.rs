//! Taps that charge once, whatever restarts (issue 40): `fairflow serve` on
//! loopback with `--follow-jobcomp` and `--replay`, stopped cleanly and
//! killed (SIGKILL) mid-stream, its followed file rotated by rename, by
//! copy-truncate (the new content longer than the old position before the
//! next poll) and cut shorter: every record is charged exactly once, and the
//! state served live equals the state recovered from the log after a kill.
//!
//! Expected usages are hand-computed: `PriorityDecayHalfLife=0` (no decay),
//! and a record of `billing=B` running `S` seconds charges `B * S`.

#[path = "support/service.rs"]
mod service;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use service::Service;

const TOKEN: &str = "a-long-enough-token";

const SETUP: &str = r#"{"op":"config","t":1700000000,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":1700000000,"name":"physics","shares":1}
{"op":"user","t":1700000000,"user":"alice","account":"physics"}
"#;

/// A `jobcomp/filetxt` record of job `id`: alice in physics, `billing`
/// units for `secs` seconds from 2023-11-14T22:20:00 (UTC; the site's zone
/// is the test machine's, as in `serve.rs`).
fn record(id: u64, billing: u64, secs: u64) -> String {
    // Within the day: at most a few hours after 22:20.
    let end = 22 * 3600 + 20 * 60 + secs;
    let end = format!("{:02}:{:02}:{:02}", end / 3600, end / 60 % 60, end % 60);
    format!(
        "JobId={id} UserId=alice(1001) GroupId=users(100) Name=x JobState=COMPLETED \
         Partition=batch TimeLimit=60 StartTime=2023-11-14T22:20:00 EndTime=2023-11-14T{end} NodeList=n1 \
         NodeCnt=1 ProcCnt=1 WorkDir=/tmp ReservationName= Tres=cpu=1,billing={billing} \
         Account=physics QOS=normal WcKey= Cluster=c SubmitTime=2023-11-14T22:00:00 \
         EligibleTime=2023-11-14T22:00:00 DerivedExitCode=0:0 ExitCode=0:0\n",
    )
}

/// `count` one-hour jobs of 4 billing units, from job `first`: 14,400 each.
fn hour_jobs(first: u64, count: u64) -> String {
    (first..first + count)
        .map(|id| record(id, 4, 3600))
        .collect()
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// Cut `path` to nothing in place.
fn truncate(path: &Path) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(0).unwrap();
}

/// alice's RawUsage in physics as the service reports it.
fn raw_usage(service: &Service) -> Option<u64> {
    let (status, body) = service.request("GET", "/v1/sshare", None, "");
    if status != 200 {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(&body).ok()?;
    fn find(value: &serde_json::Value) -> Option<u64> {
        match value {
            serde_json::Value::Object(row)
                if row.get("user").and_then(|u| u.as_str()) == Some("alice") =>
            {
                row.get("raw_usage")?.as_u64()
            }
            serde_json::Value::Object(map) => map.values().find_map(find),
            serde_json::Value::Array(list) => list.iter().find_map(find),
            _ => None,
        }
    }
    find(&value)
}

/// Wait until alice's RawUsage is `want`, then check that it stays there
/// for a few polls of the taps (nothing charged twice after it).
fn settles_at(service: &Service, want: u64, what: &str) {
    let started = Instant::now();
    let mut got = raw_usage(service);
    while got != Some(want) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: RawUsage {got:?}, want {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
        got = raw_usage(service);
    }
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(raw_usage(service), Some(want), "{what}: charged again");
}

/// Wait until the service's log has a line containing `text`.
fn logged(log: &Arc<Mutex<Vec<String>>>, text: &str) -> String {
    let started = Instant::now();
    loop {
        if let Some(line) = log.lock().unwrap().iter().find(|l| l.contains(text)) {
            return line.clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no log line with {text:?}: {:?}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Site {
    dir: tempfile::TempDir,
    token_file: std::path::PathBuf,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let token_file = service::token_file(dir.path(), TOKEN);
        Site { dir, token_file }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Start the service on this site's data directory; its log in `.1`.
    fn start(&self, extra: &[&str]) -> (Service, Arc<Mutex<Vec<String>>>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let service = Service::start_logging(
            &self.path("data"),
            &self.token_file,
            extra,
            Some(log.clone()),
        );
        (service, log)
    }

    /// Kill `service` (settled at `usage`) and start it again: the state it
    /// recovers from the log is the one it served live.
    fn killed_and_recovered(&self, service: Service, extra: &[&str], usage: u64) -> Service {
        let (_, live) = service.request("GET", "/v1/sshare", None, "");
        service.kill();
        let (service, _) = self.start(extra);
        settles_at(&service, usage, "recovered after a kill");
        assert_eq!(service.request("GET", "/v1/sshare", None, "").1, live);
        service
    }
}

#[test]
fn a_followed_jobcomp_file_charges_each_record_once_across_restarts_and_rotations() {
    let site = Site::new();
    let jobcomp = site.path("jobcomp.log");
    std::fs::write(&jobcomp, "").unwrap();
    let flags = ["--follow-jobcomp", jobcomp.to_str().unwrap()];
    let (service, _) = site.start(&flags);
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), SETUP);
    assert_eq!(status, 200, "{body}");
    // Three one-hour jobs of 4 billing units: 3 x 3,600 x 4.
    append(&jobcomp, &hour_jobs(1, 3));
    settles_at(&service, 43_200, "three jobs");
    assert!(service.terminate().success());

    // A clean restart resumes after the last line: nothing charged again.
    let (service, log) = site.start(&flags);
    let resumed = logged(&log, "resumed");
    assert!(
        resumed.contains("at byte") && resumed.contains("(line 3)"),
        "{resumed}"
    );
    settles_at(&service, 43_200, "after a clean restart");

    // Killed in the middle of 300 records of 10 units (1 unit for 10 s):
    // 3,000 more, each charged once after the restart.
    let burst: String = (100..400).map(|id| record(id, 1, 10)).collect();
    append(&jobcomp, &burst);
    std::thread::sleep(Duration::from_millis(150));
    service.kill();
    let (service, _) = site.start(&flags);
    settles_at(&service, 46_200, "after a kill mid-stream");

    // Live state equals the state recovered from the log after a kill.
    let service = site.killed_and_recovered(service, &flags, 46_200);

    // Rename rotation while running: a last record in the old file, a new
    // file with one: both charged once (2 x 14,400).
    append(&jobcomp, &hour_jobs(10, 1));
    std::fs::rename(&jobcomp, site.path("jobcomp.log.1")).unwrap();
    append(&jobcomp, &hour_jobs(11, 1));
    settles_at(&service, 75_000, "a rename rotation");

    // Copy-truncate while running, the new content longer than the old
    // position before the next poll: the copied tail and the new records,
    // once each (1 + 3 jobs: 57,600).
    append(&jobcomp, &hour_jobs(20, 1));
    std::fs::copy(&jobcomp, site.path("jobcomp.log.2")).unwrap();
    truncate(&jobcomp);
    append(&jobcomp, &hour_jobs(21, 3));
    settles_at(&service, 132_600, "a copy-truncate rotation");

    // Cut shorter with no copy (its records were charged): a new record in
    // it is charged once.
    truncate(&jobcomp);
    append(&jobcomp, &record(30, 2, 100));
    settles_at(&service, 132_800, "a shorter file");
    assert!(service.terminate().success());

    // Rotated by rename while stopped: the rest of the old file, then the
    // new one, once each (2 x 14,400).
    append(&jobcomp, &hour_jobs(40, 1));
    std::fs::rename(&jobcomp, site.path("jobcomp.log.3")).unwrap();
    append(&jobcomp, &hour_jobs(41, 1));
    let (service, log) = site.start(&flags);
    assert!(logged(&log, "rotated while stopped").contains("jobcomp.log.3"));
    settles_at(&service, 161_600, "a rotation while stopped");
    service.kill();
}

#[test]
fn a_replay_goes_on_after_its_last_line_and_is_not_replayed_again() {
    let site = Site::new();
    // 1,000 usages of 1 unit, one a second: 1,000 in all.
    let replay = site.path("replay.jsonl");
    let mut text = SETUP.to_string();
    for i in 0..1_000u64 {
        text.push_str(&format!(
            "{{\"op\":\"usage\",\"t\":{},\"account\":\"physics\",\"user\":\"alice\",\"amount\":1}}\n",
            1_700_000_100 + i
        ));
    }
    std::fs::write(&replay, text).unwrap();
    // At 500 times its clock, the replay takes two seconds: killed half way.
    let flags = [
        "--replay",
        replay.to_str().unwrap(),
        "--replay-speed",
        "500",
    ];
    let (service, _) = site.start(&flags);
    let started = Instant::now();
    while raw_usage(&service).unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing replayed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let part = raw_usage(&service).unwrap();
    service.kill();
    assert!(part < 1_000, "the kill came after the end ({part})");
    let (service, log) = site.start(&flags);
    assert!(logged(&log, "going on after line").contains("replay"));
    settles_at(&service, 1_000, "after a kill mid-replay");
    assert!(service.terminate().success());
    // A completed replay is not replayed again, after a clean stop or a kill.
    let (service, log) = site.start(&flags);
    logged(&log, "nothing to replay");
    settles_at(&service, 1_000, "after a clean restart");
    site.killed_and_recovered(service, &flags, 1_000).kill();
}
