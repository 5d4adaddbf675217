//! The fair-share history (issue 39 item 3): `fairflow history --events`
//! (the batch path) and `fairflow serve`'s `/v1/history`, on a tiny tree whose
//! values are computed by hand.
//!
//! The tree: `a` and `b` under root (1 share each); `u1`, `u2` in `a`, `u3`
//! in `b` (1 share each). Classic fair-share (`NO_FAIR_TREE`), half-life one
//! hour, steps of an hour from T0 = 2023-11-14T22:00:00 UTC. Usage: 4000 to
//! u1 at T0, 2000 to u3 at T0+1h. Jobs (submitted at T0, 1 CPU): 1 and 3 of
//! u2, 2 of u1; `PriorityWeightFairshare=100000`, every other weight 0.
//!
//! By hand (NormShares: a, b 0.5; u1, u2 0.25; u3 0.5. Classic: a child of
//! root has UE = UN; below, UE = UN + (UE_parent - UN) * S / S_siblings;
//! factor F = 2^(-UE/NormShares)):
//! - T0: raw u1 = a = root = 4000. UN: a 1, u1 1, others 0. UE: a 1, b 0,
//!   u1 1, u2 0 + (1 - 0) / 2 = 0.5, u3 0. F: a 2^-2 = 0.25, b 1, u1 2^-4 =
//!   0.0625, u2 2^-2 = 0.25, u3 1.
//! - T0+1h: raw u1 = 2000 (halved), u3 = 2000, a = b = 2000, root 4000. UN
//!   0.5 for a, b, u1, u3. UE: a, b 0.5; u1 0.5; u2 0 + 0.5 / 2 = 0.25; u3
//!   0.5. F: a, b 2^-1 = 0.5; u1 2^-2 = 0.25; u2 2^-1 = 0.5; u3 0.5.
//! - T0+2h: every raw usage halved again (u1 = u3 = a = b = 1000); the
//!   ratios, so UE and F, are those of T0+1h.
//!
//! Ranks (users among all users by F, ties in table order a/u1, a/u2, b/u3;
//! accounts among siblings by F): T0: u3 1, u2 2, u1 3; b 1, a 2. From
//! T0+1h: u2 1 (0.5, before u3 in table order), u3 2, u1 3; a 1, b 2.
//! The queue by priority (F x 100000; ties by submit time, then job id):
//! u2's jobs 1 and 3 first, then u1's job 2 at every step: u2 has 2 pending,
//! best rank 1; u1 1 pending, best rank 3; u3 none.
//!
//! Also: best ranks past `--rank-depth` said as "beyond" by both engines,
//! and a step crossed by a refused event: its `tick` is logged, so a
//! service restarted from its log answers as one that never stopped, and
//! as the oracle on that log.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use std::path::Path;
use std::sync::{Arc, Mutex};

use binary::{outcome, run};
use serde_json::Value;
use service::Service;

const TOKEN: &str = "a-long-enough-token";
const T0: i64 = 1_699_999_200;
const HOUR: i64 = 3_600;

/// The log up to T0+1h (the step at T0 taken at the usage of T0+1h).
fn first_part() -> String {
    let setup = format!(
        r#"{{"op":"config","t":{T0},"set":{{"PriorityFlags":"NO_FAIR_TREE","PriorityDecayHalfLife":"01:00:00","PriorityCalcPeriod":0,"PriorityWeightFairshare":100000}}}}
{{"op":"account","t":{T0},"name":"a","shares":1}}
{{"op":"account","t":{T0},"name":"b","shares":1}}
{{"op":"user","t":{T0},"user":"u1","account":"a","shares":1}}
{{"op":"user","t":{T0},"user":"u2","account":"a","shares":1}}
{{"op":"user","t":{T0},"user":"u3","account":"b","shares":1}}
{{"op":"usage","t":{T0},"account":"a","user":"u1","amount":4000}}
{{"op":"submit","t":{T0},"job":"1","user":"u2","account":"a","tres":{{"cpu":1}}}}
{{"op":"submit","t":{T0},"job":"2","user":"u1","account":"a","tres":{{"cpu":1}}}}
{{"op":"submit","t":{T0},"job":"3","user":"u2","account":"a","tres":{{"cpu":1}}}}
"#
    );
    let t1 = T0 + HOUR;
    setup + &format!(r#"{{"op":"usage","t":{t1},"account":"b","user":"u3","amount":2000}}"#) + "\n"
}

/// The rest: ticks that take the steps at T0+1h and T0+2h.
fn second_part() -> String {
    let (t2, t3) = (T0 + 2 * HOUR, T0 + 2 * HOUR + 1);
    format!("{{\"op\":\"tick\",\"t\":{t2}}}\n{{\"op\":\"tick\",\"t\":{t3}}}\n")
}

fn write_log(dir: &Path) -> String {
    let path = dir.join("tiny.jsonl");
    std::fs::write(&path, first_part() + &second_part()).unwrap();
    path.to_str().unwrap().to_string()
}

/// `fairflow history --events LOG --step-secs 3600 ... --json`, parsed.
fn batch_json(log: &str, extra: &[&str]) -> Value {
    let mut args = vec!["history", "--events", log, "--step-secs", "3600", "--json"];
    args.extend_from_slice(extra);
    let (ok, out, err) = run(&args);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// `(t, raw_usage, norm_shares, effective_usage, fairshare, rank)` of each step.
fn rows(series: &Value) -> Vec<(i64, u64, f64, f64, f64, u64)> {
    series["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["t"].as_i64().unwrap(),
                s["raw_usage"].as_u64().unwrap(),
                s["norm_shares"].as_f64().unwrap(),
                s["effective_usage"].as_f64().unwrap(),
                s["fairshare"].as_f64().unwrap(),
                s["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `(pending_jobs, best_queue_rank)` of each step (0: none).
fn queue(series: &Value) -> Vec<(u64, u64)> {
    (series["steps"].as_array().unwrap().iter())
        .map(|s| {
            (
                s["pending_jobs"].as_u64().unwrap(),
                s["best_queue_rank"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn a_tiny_trees_history_is_the_hand_computed_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    let (t1, t2) = (T0 + HOUR, T0 + 2 * HOUR);
    let expect = |who: &[&str], want: &[(i64, u64, f64, f64, f64, u64)]| {
        let mut args = vec!["--account", who[0]];
        if let Some(user) = who.get(1) {
            args.extend(["--user", user]);
        }
        let got = rows(&batch_json(&log, &args));
        assert_eq!(got.len(), want.len(), "{who:?}: {got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1, g.5), (w.0, w.1, w.5), "{who:?} at {}", w.0);
            for (x, y) in [(g.2, w.2), (g.3, w.3), (g.4, w.4)] {
                assert!((x - y).abs() < 1e-6, "{who:?} at {}: {g:?} vs {w:?}", w.0);
            }
        }
    };
    expect(
        &["a"],
        &[
            (T0, 4000, 0.5, 1.0, 0.25, 2),
            (t1, 2000, 0.5, 0.5, 0.5, 1),
            (t2, 1000, 0.5, 0.5, 0.5, 1),
        ],
    );
    expect(
        &["b"],
        &[
            (T0, 0, 0.5, 0.0, 1.0, 1),
            (t1, 2000, 0.5, 0.5, 0.5, 2),
            (t2, 1000, 0.5, 0.5, 0.5, 2),
        ],
    );
    expect(
        &["a", "u1"],
        &[
            (T0, 4000, 0.25, 1.0, 0.0625, 3),
            (t1, 2000, 0.25, 0.5, 0.25, 3),
            (t2, 1000, 0.25, 0.5, 0.25, 3),
        ],
    );
    expect(
        &["a", "u2"],
        &[
            (T0, 0, 0.25, 0.5, 0.25, 2),
            (t1, 0, 0.25, 0.25, 0.5, 1),
            (t2, 0, 0.25, 0.25, 0.5, 1),
        ],
    );
    expect(
        &["b", "u3"],
        &[
            (T0, 0, 0.5, 0.0, 1.0, 1),
            (t1, 2000, 0.5, 0.5, 0.5, 2),
            (t2, 1000, 0.5, 0.5, 0.5, 2),
        ],
    );
    let pending = |user: &str, account: &str| {
        queue(&batch_json(&log, &["--account", account, "--user", user]))
    };
    assert_eq!(pending("u1", "a"), [(1, 3); 3]);
    assert_eq!(pending("u2", "a"), [(2, 1); 3]);
    assert_eq!(pending("u3", "b"), [(0, 0); 3]);
    // Classic has no LevelFS: absent at every step.
    let u1 = batch_json(&log, &["--account", "a", "--user", "u1"]);
    assert!(u1["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["level_fs"].is_null()));
}

fn post(service: &Service, body: &str) {
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), body);
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert!(
        answer["rejected"].as_array().unwrap().is_empty(),
        "{answer}"
    );
}

/// `/v1/history`'s steps once `count` are there (the writer is a thread
/// of its own: a step is on disk shortly after the write that crossed it).
fn steps_when(service: &Service, query: &str, count: usize) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, body) = service.request("GET", &format!("/v1/history?{query}"), None, "");
        assert_eq!(status, 200, "{body}");
        let series: Value = serde_json::from_str(&body).unwrap();
        let found = series["steps"].as_array().unwrap().len();
        if found >= count || std::time::Instant::now() > deadline {
            assert_eq!(found, count, "{body}");
            return series;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The history is kept by default (no `--history on`).
const SERVE_FLAGS: [&str; 3] = ["--no-calc-period-ticks", "--history-step-secs", "3600"];

#[test]
fn the_service_keeps_its_history_across_a_restart_as_the_batch_path_computes_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token = service::token_file(dir.path(), TOKEN);
    let log = write_log(dir.path());

    let first = Service::start(&data, &token, &SERVE_FLAGS);
    post(&first, &first_part());
    let before = steps_when(&first, "account=a&user=u1", 1);
    assert_eq!(before["steps"][0]["t"], T0);
    assert!(first.terminate().success());

    let second = Service::start(&data, &token, &SERVE_FLAGS);
    // The step before the restart is still answered.
    steps_when(&second, "account=a&user=u1", 1);
    post(&second, &second_part());
    for (query, args) in [
        ("account=a&user=u1", vec!["--account", "a", "--user", "u1"]),
        ("account=a&user=u2", vec!["--account", "a", "--user", "u2"]),
        ("account=b", vec!["--account", "b"]),
    ] {
        let served = steps_when(&second, query, 3);
        assert_eq!(served, batch_json(&log, &args), "{query}");
    }
    // `fairflow history --server` prints what the batch path prints.
    let url = format!("http://{}", second.address);
    let asked = ["history", "--account", "a", "--user", "u2", "-P"];
    let (ok, remote, err) = run(&[&asked[..], &["--server", &url]].concat());
    assert!(ok, "{err}");
    let (ok, local, err) = run(&[&asked[..], &["--events", &log, "--step-secs", "3600"]].concat());
    assert!(ok, "{err}");
    assert_eq!(remote, local);
    assert!(second.terminate().success());

    // A torn last step (a crash while writing it) is cut with a message;
    // the steps before it are answered.
    let history = data.join("history");
    // The newest day's file (T0 + 2h is past midnight: a day of its own).
    let day = history.join(format!("steps-{}.bin", (T0 + 2 * HOUR) / 86_400));
    let size = std::fs::metadata(&day).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&day)
        .unwrap()
        .set_len(size - 5)
        .unwrap();
    let log_lines = Arc::new(Mutex::new(Vec::new()));
    let third = Service::start_logging(&data, &token, &SERVE_FLAGS, Some(log_lines.clone()));
    let series = steps_when(&third, "account=a&user=u1", 2);
    assert_eq!(series["steps"][1]["t"], T0 + HOUR);
    let said = log_lines.lock().unwrap().join("");
    assert!(said.contains("holds a torn step"), "{said}");
    third.terminate();
}

#[test]
fn bad_reads_are_refused_naming_the_field_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let token = service::token_file(dir.path(), TOKEN);
    let service = Service::start(&data, &token, &SERVE_FLAGS);
    post(&service, &(first_part() + &second_part()));
    let before = steps_when(&service, "account=a&user=u1", 3);
    for (query, status, field) in [
        ("account=nope", 404, "account `nope`"),
        ("account=a&user=nobody", 404, "user `nobody`"),
        ("user=u1", 400, "account: required"),
        (
            "account=a&from=1700007200&to=1700000000",
            400,
            "from: 1700007200 is after",
        ),
        (
            "account=a&from=yesterdayish",
            400,
            "from: `yesterdayish` is not a time",
        ),
        (
            "account=a&to=now%2B3lightyears",
            400,
            "to: `now+3lightyears`",
        ),
    ] {
        let (got, body) = service.request("GET", &format!("/v1/history?{query}"), None, "");
        assert_eq!(got, status, "{query}: {body}");
        assert!(body.contains(field), "{query}: {body}");
    }
    assert_eq!(steps_when(&service, "account=a&user=u1", 3), before);
    service.terminate();

    let log = write_log(dir.path());
    for (args, said) in [
        (vec!["--account", "nope"], "--account `nope`"),
        (
            vec!["--account", "a", "--user", "nobody"],
            "--user `nobody`",
        ),
        (
            vec![
                "--account",
                "a",
                "--from",
                "1700007200",
                "--to",
                "1700000000",
            ],
            "--from",
        ),
        (
            vec!["--account", "a", "--from", "soon"],
            "`soon` is not a time",
        ),
        (
            vec!["--account", "a", "-o", "x.gif"],
            "must end in .svg or .png",
        ),
    ] {
        let all = [&["history", "--events", &log][..], &args[..]].concat();
        let (ok, _, err) = run(&all);
        assert!(!ok && err.contains(said), "{args:?}: {err}");
    }
}

#[test]
fn retention_trims_old_steps_and_history_off_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let token = service::token_file(dir.path(), TOKEN);
    // Steps of an hour over three days, two hours kept.
    let mut body = first_part();
    for hour in 2..=72 {
        body += &format!("{{\"op\":\"tick\",\"t\":{}}}\n", T0 + hour * HOUR);
    }
    body += &format!("{{\"op\":\"tick\",\"t\":{}}}\n", T0 + 72 * HOUR + 1);
    let data = dir.path().join("kept");
    let flags = [&SERVE_FLAGS[..], &["--history-retention-secs", "7200"]].concat();
    let service = Service::start(&data, &token, &flags);
    post(&service, &body);
    let series = steps_when(&service, "account=a", 3);
    let times: Vec<i64> = (series["steps"].as_array().unwrap().iter())
        .map(|s| s["t"].as_i64().unwrap())
        .collect();
    assert_eq!(times, [T0 + 70 * HOUR, T0 + 71 * HOUR, T0 + 72 * HOUR]);
    service.terminate();
    // Only the newest day's file is left (T0 + 70h .. 72h are one UTC day:
    // T0 is 22:00, so T0 + 70h is 20:00 three days later).
    let files: Vec<String> = std::fs::read_dir(data.join("history"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("steps-"))
        .collect();
    assert_eq!(files, [format!("steps-{}.bin", (T0 + 72 * HOUR) / 86_400)]);

    let off = dir.path().join("off");
    let flags = [
        "--no-calc-period-ticks",
        "--history",
        "off",
        "--history-step-secs",
        "3600",
    ];
    let service = Service::start(&off, &token, &flags);
    post(&service, &body);
    let (status, answer) = service.request("GET", "/v1/history?account=a", None, "");
    assert_eq!(status, 404, "{answer}");
    assert!(answer.contains("--history off"), "{answer}");
    service.terminate();
    assert!(!off.join("history").exists());
}

#[test]
fn the_history_is_drawn_and_printed_in_each_form() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    let svg = dir.path().join("u2.svg");
    let (ok, _, err) = run(&[
        "history",
        "--events",
        &log,
        "--step-secs",
        "3600",
        "--account",
        "a",
        "--user",
        "u2",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    for caption in [
        "u2 (a)",
        "3 steps",
        "Fair-share factor",
        "LevelFS",
        "Fair-share rank",
    ] {
        assert!(picture.contains(caption), "{caption}");
    }
    // The series' lines (width 2; the legend's have two points): the
    // factor's and the rank's, three points each at evenly spaced times (no
    // LevelFS under classic: that panel has no line). The factor goes 0.25,
    // 0.5, 0.5 (up: y falls), the rank 2, 1, 1 (down: y grows).
    let lines: Vec<Vec<(i64, i64)>> = (picture.split("<polyline").skip(1))
        .filter(|l| l.contains("stroke-width=\"2\""))
        .map(|l| {
            let points = l
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (points.split_whitespace())
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .filter(|points: &Vec<(i64, i64)>| points.len() == 3)
        .collect();
    assert_eq!(lines.len(), 2, "{picture}");
    let (factor, rank) = (&lines[0], &lines[1]);
    for line in &lines {
        assert!(((line[1].0 - line[0].0) - (line[2].0 - line[1].0)).abs() <= 1);
    }
    assert!(
        factor[0].1 > factor[1].1 && factor[1].1 == factor[2].1,
        "{factor:?}"
    );
    assert!(rank[0].1 < rank[1].1 && rank[1].1 == rank[2].1, "{rank:?}");

    let history = |form: &[&str]| {
        let mut args = vec!["history", "--events", &log, "--step-secs", "3600"];
        args.extend_from_slice(&["--account", "a", "--user", "u1"]);
        args.extend_from_slice(form);
        let (ok, out, err) = outcome(binary::fairflow(&args));
        assert!(ok, "{err}");
        out
    };
    let parsable = history(&["-P"]);
    let lines: Vec<&str> = parsable.lines().collect();
    assert_eq!(
        lines[0],
        "Time|RawUsage|NormShares|NormUsage|EffectvUsage|LevelFS|FairShare|Rank|Pending|BestQueueRank"
    );
    assert_eq!(lines.len(), 4);
    assert!(
        lines[1].ends_with("|4000|0.250000|1.000000|1.000000||0.062500|3|1|3"),
        "{parsable}"
    );
    let table = history(&[]);
    assert!(table.lines().nth(1).unwrap().starts_with("----"), "{table}");
    assert_eq!(table.lines().count(), 5);
    let json: Value = serde_json::from_str(&history(&["--json"])).unwrap();
    assert_eq!(json["account"], "a");
    assert_eq!(json["user"], "u1");
    assert_eq!(json["steps"].as_array().unwrap().len(), 3);
}

#[test]
fn best_ranks_beyond_the_rank_depth_are_said_so_and_both_engines_agree() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path());
    // The queue (module docs): u2's jobs at ranks 1 and 2, u1's at 3. With
    // a depth of 2, u1's best entry lies beyond it; u2's is exact.
    for engine in ["batch", "incremental"] {
        let at = |user: &str| {
            let args = ["--account", "a", "--user", user, "--rank-depth", "2"];
            batch_json(&log, &[&args[..], &["--engine", engine]].concat())
        };
        let u1 = at("u1");
        assert_eq!(u1["steps"].as_array().unwrap().len(), 3, "{engine}: {u1}");
        for step in u1["steps"].as_array().unwrap() {
            assert_eq!(step["pending_jobs"], 1, "{engine}: {step}");
            assert!(step.get("best_queue_rank").is_none(), "{engine}: {step}");
            assert_eq!(step["best_queue_rank_beyond"], 2, "{engine}: {step}");
        }
        let u2 = at("u2");
        assert_eq!(queue(&u2), [(2, 1); 3], "{engine}");
        assert!(u2["steps"][0].get("best_queue_rank_beyond").is_none());
    }
    let flags = ["--account", "a", "--user", "u1", "--rank-depth", "2", "-P"];
    let out = answer(
        &["history", "--events", &log, "--step-secs", "3600"],
        &flags,
    );
    let first = out.lines().nth(1).unwrap();
    assert!(first.ends_with("|3|1|>2"), "{out}");
    let (ok, _, err) = run(&[
        "history",
        "--events",
        &log,
        "--account",
        "a",
        "--rank-depth",
        "0",
    ]);
    assert!(!ok && err.contains("--rank-depth"), "{err}");
}

/// `fairflow ARGS... SOURCE...`'s standard output, which must succeed.
fn answer(args: &[&str], source: &[&str]) -> String {
    let (ok, out, err) = run(&[args, source].concat());
    assert!(ok, "{args:?} {source:?}: {err}");
    out
}

/// Post `body`, expecting exactly `rejected` of its lines refused.
fn post_rejecting(service: &Service, body: &str, rejected: usize) {
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), body);
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let refused = answer["rejected"].as_array().unwrap().len();
    assert_eq!(refused, rejected, "{answer}");
}

/// The reads compared after a restart: the table, the queue, one job's
/// factors, every job's (sprio's ages follow the engine's time).
const READS: [&[&str]; 4] = [
    &["sshare", "-a", "-l"],
    &["top", "-k", "10"],
    &["explain", "2"],
    &["sprio", "-l"],
];

#[test]
fn a_step_crossed_by_a_rejected_event_is_replayed_as_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let token = service::token_file(dir.path(), TOKEN);
    let t1 = T0 + HOUR;
    // Ages count (they follow the engine's time), and a running job
    // accrues usage settled at each 5-minute calc period.
    let config = r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityDecayHalfLife":"01:00:00","PriorityCalcPeriod":300,"PriorityWeightFairshare":100000,"PriorityWeightAge":1000,"PriorityMaxAge":"1-0"}"#;
    let mut setup = format!("{{\"op\":\"config\",\"t\":{T0},\"set\":{config}}}\n");
    for line in first_part().lines().skip(1).take(9) {
        setup += &format!("{line}\n");
    }
    setup += &format!(
        "{{\"op\":\"submit\",\"t\":{T0},\"job\":\"9\",\"user\":\"u3\",\"account\":\"b\",\"tres\":{{\"cpu\":2}}}}\n\
         {{\"op\":\"start\",\"t\":{},\"job\":\"9\"}}\n",
        T0 + 60
    );
    // Crosses the step at T0+1h, and is refused (no such user).
    let crossing = format!(
        "{{\"op\":\"usage\",\"t\":{},\"account\":\"a\",\"user\":\"nobody\",\"amount\":5}}\n",
        t1 + 600
    );
    let more = format!(
        "{{\"op\":\"usage\",\"t\":{},\"account\":\"a\",\"user\":\"u2\",\"amount\":700}}\n",
        t1 + 1000
    );
    // What the log must hold: the step's tick where the refused event was.
    let logged = [
        setup.clone(),
        format!("{{\"op\":\"tick\",\"t\":{t1}}}\n"),
        more.clone(),
    ];
    let flags = ["--no-calc-period-ticks", "--history-step-secs", "3600"];
    let (kept, restarted) = (dir.path().join("kept"), dir.path().join("restarted"));
    let never = Service::start(&kept, &token, &flags);
    let mut again = Service::start(&restarted, &token, &flags);
    for (part, (body, refused)) in [(setup, 0), (crossing, 1), (more, 0)]
        .into_iter()
        .enumerate()
    {
        for service in [&never, &again] {
            post_rejecting(service, &body, refused);
        }
        again.kill();
        again = Service::start(&restarted, &token, &flags);
        let log = dir.path().join(format!("logged-{part}.jsonl"));
        std::fs::write(&log, logged[..=part].concat()).unwrap();
        let log = log.to_str().unwrap();
        for read in READS {
            let kept_answer = answer(read, &["--server", &format!("http://{}", never.address)]);
            let replayed = answer(read, &["--server", &format!("http://{}", again.address)]);
            assert_eq!(replayed, kept_answer, "after part {part}: {read:?}");
            assert_eq!(
                answer(read, &["--events", log]),
                kept_answer,
                "{part}: {read:?}"
            );
        }
    }
    // The tick is in the service's log.
    let segments = std::fs::read_dir(restarted.join("log")).unwrap();
    let mut bytes = Vec::new();
    for segment in segments {
        bytes.extend(std::fs::read(segment.unwrap().path()).unwrap());
    }
    let tick = format!("{{\"op\":\"tick\",\"t\":{t1}}}");
    assert!(
        String::from_utf8_lossy(&bytes).contains(&tick),
        "no {tick} logged"
    );
    never.terminate();
    again.terminate();
}
