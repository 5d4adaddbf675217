//! End to end for a Flux site: a flux-accounting database of schema version
//! 38 built here from SQL (`datasets/flux/schema_v38.sql` and the rows
//! below), `fairflow import flux --db --journal` with a recorded events
//! journal of submissions and completions, then each job's priority and the
//! queue order on both engines, against values computed by hand below from
//! flux-accounting's formulas (`mf_priority.cpp`'s `priority_calculation`,
//! the weighted tree's `F = (N - rank + 1) / N`), and `view-bank -t -P` and
//! `flux-jobs` on both engines.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;
use binary::{fairflow, text};

use std::path::PathBuf;

const SCHEMA: &str = include_str!("../../../datasets/flux/schema_v38.sql");

/// Banks A and B (1 share each; B's priority 2), bank weight 1000 (the
/// other weights flux-accounting's defaults: fair-share 100000, queue 10000,
/// urgency 1000); alice (uid 1001) in A with usage 10; carol (1003) in A
/// (her default bank, usage 0) and in B (usage 50); bob (1002) in B with
/// usage 100. Queues batch (priority 0) and debug (priority 1).
const SITE: &str = "
INSERT INTO bank_table (bank, parent_bank, shares, priority) VALUES ('root', '', 1, 0), ('A', 'root', 1, 0), ('B', 'root', 1, 2);
INSERT INTO association_table (creation_time, username, userid, bank, default_bank, shares, job_usage) VALUES
    (0, 'alice', 1001, 'A', 'A', 1, 10), (0, 'carol', 1003, 'A', 'A', 1, 0),
    (0, 'carol', 1003, 'B', 'A', 1, 50), (0, 'bob', 1002, 'B', 'B', 1, 100);
INSERT INTO queue_table (queue, priority) VALUES ('batch', 0), ('debug', 1);
UPDATE priority_factor_weight_table SET weight = 1000 WHERE factor = 'bank';
";

/// The journal: job 101 (carol, her default bank A, 2 nodes) runs from its
/// alloc at 1010 to its clean at 1110: 200 node-seconds (UsageModel=flux,
/// node weight 1). Then pending: 201 alice debug; 202 bob (no queue); 203
/// carol in bank B, batch, urgency 20; 204 alice at urgency 0 (held); 205
/// bob at urgency 31 (expedited); 206 carol (A) debug, urgency raised from
/// 16 to 18; 207 bob (ties 202); 208 alice, cancelled and cleaned.
const JOURNAL: &str = r#"{"id":101,"events":[{"timestamp":1000.2,"name":"submit","context":{"userid":1003,"urgency":16,"flags":0,"version":1}},{"timestamp":1000.3,"name":"validate"},{"timestamp":1000.4,"name":"depend"},{"timestamp":1000.5,"name":"priority","context":{"priority":25000}}],"jobspec":{"resources":[{"type":"node","count":2,"with":[{"type":"slot","count":1,"label":"task","with":[{"type":"core","count":1}]}]}],"attributes":{"system":{"queue":"batch","duration":0}}}}
{"id":101,"events":[{"timestamp":1000.6,"name":"jobspec-update","context":{"attributes.system.bank":"A"}}]}
{"id":101,"events":[{"timestamp":1010.0,"name":"alloc","context":{"annotations":{"sched":{"resource_summary":"rank[0-1]/core0"}}}},{"timestamp":1010.1,"name":"start"}],"R":{"version":1,"execution":{"R_lite":[{"rank":"0-1","children":{"core":"0"}}],"starttime":1010,"expiration":0}}}
{"id":201,"events":[{"timestamp":1020.0,"name":"submit","context":{"userid":1001,"urgency":16}}],"jobspec":{"resources":[{"type":"slot","count":1,"with":[{"type":"core","count":1}]}],"attributes":{"system":{"queue":"debug"}}}}
{"id":202,"events":[{"timestamp":1030.0,"name":"submit","context":{"userid":1002,"urgency":16}}]}
{"id":203,"events":[{"timestamp":1040.0,"name":"submit","context":{"userid":1003,"urgency":20}}],"jobspec":{"attributes":{"system":{"bank":"B","queue":"batch"}}}}
{"id":204,"events":[{"timestamp":1050.0,"name":"submit","context":{"userid":1001,"urgency":0}}]}
{"id":205,"events":[{"timestamp":1060.0,"name":"submit","context":{"userid":1002,"urgency":31}}]}
{"id":206,"events":[{"timestamp":1070.0,"name":"submit","context":{"userid":1003,"urgency":16}}],"jobspec":{"attributes":{"system":{"queue":"debug"}}}}
{"id":207,"events":[{"timestamp":1080.0,"name":"submit","context":{"userid":1002,"urgency":16}}]}
{"id":206,"events":[{"timestamp":1090.0,"name":"urgency","context":{"userid":1003,"urgency":18}}]}
{"id":208,"events":[{"timestamp":1095.0,"name":"submit","context":{"userid":1001,"urgency":16}}]}
{"id":208,"events":[{"timestamp":1096.0,"name":"exception","context":{"type":"cancel","severity":0,"note":""}},{"timestamp":1097.0,"name":"clean"}]}
{"id":101,"events":[{"timestamp":1109.0,"name":"finish","context":{"status":0}},{"timestamp":1109.5,"name":"release","context":{"ranks":"all","final":true}},{"timestamp":1110.0,"name":"clean"}]}
{"id":-1,"events":[]}
"#;

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fairflow-flux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The database, the journal and the imported log.
fn import() -> PathBuf {
    let db = temp_path("site.db");
    let _ = std::fs::remove_file(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(SITE).unwrap();
    drop(conn);
    let journal = temp_path("journal.jsonl");
    std::fs::write(&journal, JOURNAL).unwrap();
    let log = temp_path("site.jsonl");
    let out = fairflow(&[
        "import",
        "flux",
        "--db",
        db.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--time",
        "2000",
        "-o",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("rejected"),
        "{}",
        text(&out.stderr)
    );
    log
}

/// The queue the journal leaves, computed by hand below
/// (`a_flux_site_from_database_and_journal_to_the_queue_on_both_engines`).
const EXPECTED_QUEUE: [(&str, u64); 6] = [
    ("205", 4_294_967_295),
    ("203", 106_000),
    ("202", 77_000),
    ("207", 77_000),
    ("201", 60_000),
    ("206", 37_000),
];

/// `top --json`'s (job, priority) pairs.
fn queue_of(top_json: &str) -> Vec<(String, u64)> {
    let top: serde_json::Value = serde_json::from_str(top_json).unwrap();
    top.as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_str().unwrap().to_string(),
                j["priority"].as_u64().unwrap(),
            )
        })
        .collect()
}

const ENGINES: [&[&str]; 3] = [
    &["--engine", "batch"],
    &["--engine", "incremental", "--workers", "1"],
    &["--engine", "incremental", "--workers", "2"],
];

fn run(log: &std::path::Path, command: &[&str], engine: &[&str]) -> String {
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["--events", log.to_str().unwrap()]);
    args.extend(engine);
    let out = fairflow(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_flux_site_from_database_and_journal_to_the_queue_on_both_engines() {
    let log = import();
    // Fair-share at t=2000, by hand (flux-accounting's weighted tree): after
    // job 101's 200 node-seconds, bank A has used 10 + 200 = 210 and B
    // 50 + 100 = 150 (decay scales both alike), equal shares: B ranks
    // first. In B carol (50) before bob (100); in A alice (10) before carol
    // (200). N = 4: F = (4 - rank + 1) / 4: carol@B 1.0, bob@B 0.75,
    // alice@A 0.5, carol@A 0.25.
    //
    // P = round(100000 F + 10000 queue + 1000 bank + 1000 (urgency - 16)),
    // bank B's priority 2, A's 0; queue debug 1, batch 0, none 0:
    //   201 alice A debug 16:   50000 + 10000 +    0 +    0 =  60000
    //   202 bob B none 16:      75000 +     0 + 2000 +    0 =  77000
    //   203 carol B batch 20:  100000 +     0 + 2000 + 4000 = 106000
    //   204 alice urgency 0: held, priority 0, not ranked
    //   205 bob urgency 31: 4294967295 (expedited)
    //   206 carol A debug 18:   25000 + 10000 +    0 + 2000 =  37000
    //   207 bob B none 16:      77000, after 202 (ties by job id)
    // 101 ran and ended; 208 was cancelled.
    let mut answers = Vec::new();
    for engine in ENGINES {
        let got = queue_of(&run(&log, &["top", "-k", "20", "--json"], engine));
        let want: Vec<(String, u64)> = EXPECTED_QUEUE
            .iter()
            .map(|(j, p)| (j.to_string(), *p))
            .collect();
        assert_eq!(got, want, "{engine:?}");
        let jobs = run(&log, &["flux-jobs"], engine);
        let tree = run(&log, &["view-bank", "-t", "-P"], engine);
        answers.push((jobs, tree));
    }
    let (jobs, tree) = &answers[0];
    assert!(answers.iter().all(|a| a == &answers[0]), "{answers:#?}");
    // The held job is listed (flux account jobs lists every active job)
    // with priority 0; the fair-shares are the hand-computed ones.
    let rows: Vec<Vec<&str>> = jobs
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let row = |id: &str| rows.iter().find(|r| r[0] == id).unwrap().clone();
    assert_eq!(
        row("203"),
        [
            "203", "carol", "B", "2.0", "1000", "batch", "0", "10000", "1.0", "100000", "20",
            "1000", "106000"
        ]
    );
    assert_eq!(
        row("206"),
        [
            "206", "carol", "A", "0.0", "1000", "debug", "1", "10000", "0.25", "100000", "18",
            "1000", "37000"
        ]
    );
    // No queue: the QUEUE cell is empty.
    assert_eq!(
        row("204"),
        ["204", "alice", "A", "0.0", "1000", "0", "10000", "0.5", "100000", "0", "1000", "0"]
    );
    let lines: Vec<&str> = tree.lines().collect();
    assert_eq!(
        lines[0],
        "Bank|Username|Active|RawShares|RawUsage|Fairshare"
    );
    let fairshares: Vec<(&str, &str)> = lines
        .iter()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            (cells.len() == 6).then(|| (cells[1], cells[5]))
        })
        .collect();
    assert_eq!(
        fairshares,
        [
            ("Username", "Fairshare"),
            ("alice", "0.5"),
            ("carol", "0.25"),
            ("bob", "0.75"),
            ("carol", "1.0"),
        ]
    );
}

#[test]
fn another_schema_version_is_a_clear_error() {
    let db = temp_path("v37.db");
    let _ = std::fs::remove_file(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch("PRAGMA user_version = 37;").unwrap();
    drop(conn);
    let out = fairflow(&["import", "flux", "--db", db.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("schema version 37") && stderr.contains("reads version 38"),
        "{stderr}"
    );
}

/// The site's database in `dir` and its events at 1000, before the
/// journal's first (`import flux --db`).
fn site_db(dir: &std::path::Path) -> (PathBuf, String) {
    let db = dir.join("site.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(SITE).unwrap();
    drop(conn);
    let db_log = dir.join("db.jsonl");
    let out = fairflow(&[
        "import",
        "flux",
        "--db",
        db.to_str().unwrap(),
        "--time",
        "1000",
        "-o",
        db_log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (db, std::fs::read_to_string(&db_log).unwrap())
}

/// `fairflow serve --flux-db DB --follow-flux-journal FILE` on loopback, on
/// both engines: the database's events posted, the journal appended to the
/// followed file with one malformed line among its lines, then `GET /v1/top`
/// polled until the queue is the hand-computed one of the end-to-end test
/// above; the malformed line is rejected (its line number in the service's
/// log, one rejection in the metrics) and changes nothing.
#[test]
fn a_followed_flux_journal_reaches_the_services_queue() {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let (db, db_events) = site_db(dir.path());
    // The journal with a malformed line (a timestamp that is not a number)
    // as line 6 of the followed file.
    let mut journal_lines: Vec<&str> = JOURNAL.lines().collect();
    let bad = r#"{"id":209,"events":[{"timestamp":"soon","name":"submit","context":{"userid":1001,"urgency":16}}]}"#;
    journal_lines.insert(5, bad);
    let token = "a-long-enough-token";
    for engine in [&["--engine", "batch"][..], &["--workers", "2"]] {
        let run_dir = tempfile::tempdir().unwrap();
        let token_file = run_dir.path().join("token");
        std::fs::write(&token_file, token).unwrap();
        std::fs::set_permissions(
            &token_file,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let journal = run_dir.path().join("journal.jsonl");
        std::fs::write(&journal, "").unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let service = service::Service::start_logging(
            &run_dir.path().join("data"),
            &token_file,
            &[
                &[
                    "--flux-db",
                    db.to_str().unwrap(),
                    "--follow-flux-journal",
                    journal.to_str().unwrap(),
                ][..],
                engine,
            ]
            .concat(),
            Some(log.clone()),
        );
        let (status, body) = service.request("POST", "/v1/events", Some(token), &db_events);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"rejected\":[]"), "{body}");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&journal)
            .unwrap();
        for line in &journal_lines {
            writeln!(file, "{line}").unwrap();
        }
        drop(file);
        let want: Vec<(String, u64)> = EXPECTED_QUEUE
            .iter()
            .map(|(j, p)| (j.to_string(), *p))
            .collect();
        let started = Instant::now();
        let mut got = Vec::new();
        // The last line (the backlog sentinel) follows job 101's clean: the
        // queue is final once 101 is gone and the six jobs are ranked.
        while started.elapsed() < Duration::from_secs(30) {
            let (status, body) = service.request("GET", "/v1/top?k=20", None, "");
            assert_eq!(status, 200, "{body}");
            got = queue_of(&body);
            if got == want {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(got, want, "{engine:?}");
        let (_, metrics) = service.request("GET", "/metrics", None, "");
        assert!(
            metrics.contains("fairflow_events_rejected_total 1"),
            "{engine:?}: {metrics}"
        );
        // The service's log reaches the pipe a moment after it is written.
        let logged_by = Instant::now() + Duration::from_secs(10);
        let mut logged = String::new();
        while Instant::now() < logged_by && !logged.contains("rejected input: line 6: ") {
            std::thread::sleep(Duration::from_millis(50));
            logged = log.lock().unwrap().join("");
        }
        assert!(
            logged.contains("rejected input: line 6: "),
            "{engine:?}: {logged}"
        );
        service.kill();
    }
}

/// `user`'s RawUsage in `bank` as the service reports it.
fn raw_usage(service: &service::Service, user: &str, bank: &str) -> Option<u64> {
    let (status, body) = service.request("GET", "/v1/sshare", None, "");
    if status != 200 {
        return None;
    }
    fn find(value: &serde_json::Value, user: &str, bank: &str) -> Option<u64> {
        match value {
            serde_json::Value::Object(row)
                if row.get("user").and_then(|u| u.as_str()) == Some(user)
                    && row.get("account").and_then(|a| a.as_str()) == Some(bank) =>
            {
                row.get("raw_usage")?.as_u64()
            }
            serde_json::Value::Object(map) => map.values().find_map(|v| find(v, user, bank)),
            serde_json::Value::Array(list) => list.iter().find_map(|v| find(v, user, bank)),
            _ => None,
        }
    }
    find(&serde_json::from_str(&body).ok()?, user, bank)
}

/// A followed Flux journal across restarts (clean and SIGKILL), a rename
/// rotation, and a job's `alloc` written before its `submit`: job 101's 200
/// node-seconds are charged to carol in A once, the queue is the
/// hand-computed one, no line is rejected (nothing is read twice), and the
/// state served live equals the state recovered after a kill. Job 301 (bob,
/// 1 node from its alloc at 1200 to its clean at 1300) charges bob in B 100
/// more, though its `alloc` comes before its `submit`.
#[test]
fn a_followed_flux_journal_charges_once_across_restarts_and_rotations() {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let (db, db_events) = site_db(dir.path());
    let token = "a-long-enough-token";
    let token_file = service::token_file(dir.path(), token);
    let journal = dir.path().join("journal.jsonl");
    std::fs::write(&journal, "").unwrap();
    let data = dir.path().join("data");
    let flags = [
        "--flux-db",
        db.to_str().unwrap(),
        "--follow-flux-journal",
        journal.to_str().unwrap(),
    ];
    let start = || {
        let log = Arc::new(Mutex::new(Vec::new()));
        let service =
            service::Service::start_logging(&data, &token_file, &flags, Some(log.clone()));
        (service, log)
    };
    let wait = |what: &str, mut done: Box<dyn FnMut() -> bool + '_>| {
        let started = Instant::now();
        while !done() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let append = |path: &std::path::Path, lines: &[&str]| {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        for line in lines {
            writeln!(file, "{line}").unwrap();
        }
    };
    let lines: Vec<&str> = JOURNAL.lines().collect();
    // Up to job 208's submit; job 101 is running.
    let (first, rest) = lines.split_at(12);

    let (service, _) = start();
    let (status, body) = service.request("POST", "/v1/events", Some(token), &db_events);
    assert_eq!(status, 200, "{body}");
    let (bob_before, carol_before) = (
        raw_usage(&service, "bob", "B"),
        raw_usage(&service, "carol", "A"),
    );
    append(&journal, first);
    wait(
        "job 208 pending",
        Box::new(|| {
            service
                .request("GET", "/v1/top?k=20", None, "")
                .1
                .contains("\"208\"")
        }),
    );
    assert!(service.terminate().success());

    // A clean restart: resumed, jobs rebuilt from the lines before.
    let (service, log) = start();
    wait(
        "resumed",
        Box::new(|| {
            log.lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("resumed") && l.contains("(line 12)"))
        }),
    );
    wait(
        "jobs rebuilt",
        Box::new(|| {
            log.lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("jobs rebuilt"))
        }),
    );
    service.kill();

    // After a kill, the rest in a new file (the old one renamed): job 101
    // ends in it and is charged once; 301's alloc comes before its submit.
    let (service, _) = start();
    std::fs::rename(&journal, dir.path().join("journal.jsonl.1")).unwrap();
    let alloc_301 = r#"{"id":301,"events":[{"timestamp":1200.0,"name":"alloc"}],"R":{"version":1,"execution":{"R_lite":[{"rank":"0","children":{"core":"0"}}]}}}"#;
    let submit_301 = r#"{"id":301,"events":[{"timestamp":1190.0,"name":"submit","context":{"userid":1002,"urgency":16}}]}"#;
    let clean_301 = r#"{"id":301,"events":[{"timestamp":1300.0,"name":"clean"}]}"#;
    let charged = |service: &service::Service| {
        (
            raw_usage(service, "carol", "A"),
            raw_usage(service, "bob", "B"),
        )
    };
    append(&journal, rest);
    let ended_101 = (carol_before.map(|u| u + 200), bob_before);
    wait(
        "job 101 charged",
        Box::new(|| charged(&service) == ended_101),
    );
    let (_, queue) = service.request("GET", "/v1/top?k=20", None, "");
    let expected: Vec<(String, u64)> = EXPECTED_QUEUE
        .iter()
        .map(|(j, p)| (j.to_string(), *p))
        .collect();
    assert_eq!(queue_of(&queue), expected);
    append(&journal, &[alloc_301, submit_301, clean_301]);
    let want = (carol_before.map(|u| u + 200), bob_before.map(|u| u + 100));
    wait("job 301 charged", Box::new(|| charged(&service) == want));
    let (_, live) = service.request("GET", "/v1/sshare", None, "");
    std::thread::sleep(Duration::from_millis(800));
    // Nothing before the position was read again (the book would reject it).
    let (_, metrics) = service.request("GET", "/metrics", None, "");
    assert!(
        metrics.contains("fairflow_events_rejected_total 0"),
        "{metrics}"
    );
    service.kill();

    // Recovered after the kill: the same state, nothing read twice.
    let (service, _) = start();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(charged(&service), want);
    assert_eq!(service.request("GET", "/v1/sshare", None, "").1, live);
    service.kill();
}
