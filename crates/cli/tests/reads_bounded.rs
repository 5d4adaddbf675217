//! Reads that cannot stall or exhaust `fairflow serve` (issue 40), on
//! loopback through the real service: a long what-if runs beside `/v1/top`
//! and stops when its client leaves or the service stops; a proposal over
//! the limits is a 400; clients that stop reading are refused past the
//! response budget and dropped after the write timeout; long tables and
//! pages are sent in pieces, each the command's answer; a wide sprio format
//! is a 400 that never rebuilds the engine; the router's own errors are JSON;
//! readers of many states hold at most the table cap.
//! Nothing here times anything: each test asserts what was answered, and in
//! what order.

#[path = "support/binary.rs"]
mod binary;
#[path = "support/service.rs"]
mod service;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;
use service::{token_file, Service};

const TOKEN: &str = "a-long-enough-token";

/// After the generated log's last event (`fairflow gen` ends near 1.70e9).
const LATER: i64 = 1_800_000_000;

/// A service holding a generated cluster of `jobs` pending jobs.
fn loaded(dir: &std::path::Path, jobs: usize, extra: &[&str]) -> Service {
    let token = token_file(dir, TOKEN);
    // The fair-share history would take a step's read (the table and the
    // whole queue) every 5 minutes of the log's 14 days: not these tests'
    // subject, and over their request deadline.
    let extra = [extra, &["--history", "off"]].concat();
    let service = Service::start(&dir.join("data"), &token, &extra);
    let jobs = jobs.to_string();
    let (ok, log, err) = binary::run(&["gen", "--associations", "200", "--jobs", &jobs]);
    assert!(ok, "{err}");
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), &log);
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["rejected"], serde_json::json!([]), "{answer}");
    service
}

/// A proposal of `INCR_ONLY` and `ticks` later times: each time costs the
/// oracle a whole evaluation of every job.
fn ticks(ticks: usize) -> String {
    let mut lines = vec![format!(
        r#"{{"op":"config","t":{LATER},"set":{{"PriorityFlags":"INCR_ONLY"}}}}"#
    )];
    lines.extend((1..=ticks).map(|i| format!(r#"{{"op":"tick","t":{}}}"#, LATER + i as i64)));
    lines.join("\n")
}

/// Send a request and leave its answer unread.
fn send(address: SocketAddr, method: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: fairflow\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    stream
}

/// Has anything of an answer arrived on `stream` (without waiting)?
fn answered(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let seen =
        !matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    stream.set_nonblocking(false).unwrap();
    seen
}

/// The value of an OpenMetrics sample without labels.
fn metric(service: &Service, name: &str) -> f64 {
    let (status, text) = service.request("GET", "/metrics", None, "");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .parse()
        .unwrap()
}

/// Wait up to 60 s for `check`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `error` of a JSON error answer.
fn error_of(body: &str) -> String {
    let value: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    value["error"]
        .as_str()
        .expect("an `error` string")
        .to_string()
}

#[test]
fn top_answers_while_a_whatif_runs_and_the_whatif_stops_when_its_client_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(dir.path(), 5_000, &[]);
    let whatif = send(service.address, "POST", "/v1/whatif", &ticks(999));
    // The what-if is taken (the applier copied the book) before top is asked.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        let (status, top) = service.request("GET", "/v1/top?k=3", None, "");
        assert_eq!(status, 200, "{top}");
        assert_eq!(
            serde_json::from_str::<Value>(&top)
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }
    let (status, _) = service.request("GET", "/healthz", None, "");
    assert_eq!(status, 200);
    assert!(
        !answered(&whatif),
        "top was answered while the what-if still ran (1,000 whole evaluations of 5,000 jobs)"
    );
    assert_eq!(metric(&service, "fairflow_whatifs_stopped_total"), 0.0);
    drop(whatif);
    eventually("the abandoned what-if is stopped", || {
        metric(&service, "fairflow_whatifs_stopped_total") == 1.0
    });
    // A slot is free again: a small what-if is answered.
    let small = format!(r#"{{"op":"tick","t":{LATER}}}"#);
    let (status, answer) = service.request("POST", "/v1/whatif?k=1", None, &small);
    assert_eq!(status, 200, "{answer}");
    service.kill();
}

#[test]
fn sigterm_stops_a_running_whatif_and_the_service_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(dir.path(), 5_000, &[]);
    let mut whatif = send(service.address, "POST", "/v1/whatif", &ticks(999));
    std::thread::sleep(Duration::from_millis(500));
    assert!(!answered(&whatif));
    let status = service.terminate();
    assert!(status.success(), "{status:?}");
    let mut answer = String::new();
    whatif.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    assert!(error_of(body).contains("stopping"), "{body}");
}

#[test]
fn a_proposal_over_the_limits_is_refused_naming_the_line_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(dir.path(), 50, &[]);
    // The config line (the first time), then 1,001 later times: line 1,001
    // holds the 1,001st distinct time.
    let (status, body) = service.request("POST", "/v1/whatif", None, &ticks(1_001));
    assert_eq!(status, 400, "{body}");
    let message = error_of(&body);
    assert!(message.contains("line 1001: field `t`"), "{message}");
    assert!(
        message.contains("at most 1000 distinct event times"),
        "{message}"
    );
    let many: String = (0..10_001)
        .map(|_| format!("{{\"op\":\"tick\",\"t\":{LATER}}}\n"))
        .collect();
    let (status, body) = service.request("POST", "/v1/whatif", None, &many);
    assert_eq!(status, 400, "{body}");
    let message = error_of(&body);
    assert!(
        message.contains("line 10001") && message.contains("at most 10000 events"),
        "{message}"
    );
    service.kill();
}

#[test]
fn readers_past_the_response_budget_get_503_and_slow_readers_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // Twelve 2 MiB windows; a client that reads nothing for 2 s is dropped.
    let budget = (12 * (2 << 20)).to_string();
    let service = loaded(
        dir.path(),
        10_000,
        &["--max-response-bytes", &budget, "--write-timeout-secs", "2"],
    );
    // Twelve clients ask for every job's priority (about 16 MB each: more
    // than loopback sockets buffer for a reader that reads nothing) and
    // read nothing.
    let slow: Vec<TcpStream> = (0..12)
        .map(|_| send(service.address, "GET", "/v1/sprio?format=json", ""))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = service.request("GET", "/v1/sprio?format=json", None, "");
    assert_eq!(status, 503, "the thirteenth big read is refused at once");
    assert!(error_of(&body).contains("slow readers"), "{body}");
    // The slow readers are dropped after the write timeout and their
    // windows released: the same read is answered whole.
    eventually("the slow readers are dropped", || {
        service.request("GET", "/v1/sprio?format=json", None, "").0 == 200
    });
    let (status, body) = service.request("GET", "/v1/sprio?format=json", None, "");
    assert_eq!(status, 200);
    let rows = serde_json::from_str::<Value>(&body).unwrap();
    assert!(
        rows.as_array().unwrap().len() >= 10_000,
        "every pending job is listed"
    );
    for mut stream in slow {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut sink = Vec::new();
        // Closed by the service: the read ends (EOF or reset) before a
        // whole answer arrived.
        let _ = stream.read_to_end(&mut sink);
        let text = String::from_utf8_lossy(&sink);
        assert!(
            !text.ends_with("0\r\n\r\n"),
            "a dropped answer is not complete"
        );
    }
    service.kill();
}

/// `/metrics` is rendered whole, so it holds its own size of the response
/// budget while it is sent: with a budget of one 2 MiB window, held by a
/// reader of every job's priority that reads nothing, a scrape of every
/// association's gauges is refused at once (503, JSON); once that reader is
/// dropped after the write timeout, the scrape is answered.
#[test]
fn metrics_answers_count_in_the_response_budget() {
    let dir = tempfile::tempdir().unwrap();
    let budget = (2 << 20).to_string();
    let service = loaded(
        dir.path(),
        10_000,
        &[
            "--max-response-bytes",
            &budget,
            "--write-timeout-secs",
            "2",
            "--metrics-associations",
            "all",
        ],
    );
    let slow = send(service.address, "GET", "/v1/sprio?format=json", "");
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = service.request("GET", "/metrics", None, "");
    assert_eq!(status, 503, "{body}");
    assert!(error_of(&body).contains("slow readers"), "{body}");
    eventually("the slow reader is dropped", || {
        service.request("GET", "/metrics", None, "").0 == 200
    });
    let (status, text) = service.request("GET", "/metrics", None, "");
    assert_eq!(status, 200);
    assert!(text.contains("fairflow_association_raw_usage"), "{text}");
    drop(slow);
    service.kill();
}

/// Slow readers of different states cannot each keep a table alive: with
/// `--max-held-table-bytes 1`, one state's sprio rows held by a reader that
/// reads nothing are shared by every reader of that state, but a read of
/// another state's rows is refused at once (503, JSON) while they are held,
/// and answered once that reader is dropped after the write timeout. The
/// held tables are gauged in `/metrics`.
#[test]
fn readers_of_many_states_hold_at_most_the_table_cap() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(
        dir.path(),
        10_000,
        &["--max-held-table-bytes", "1", "--write-timeout-secs", "2"],
    );
    let slow = send(service.address, "GET", "/v1/sprio?format=json", "");
    eventually("the slow reader's table is held", || {
        metric(&service, "fairflow_response_held_table_bytes") > 0.0
    });
    let held = metric(&service, "fairflow_response_held_table_bytes");
    assert!(
        held > 10_000.0 * 50.0,
        "10,000 jobs' compact rows are counted: {held} bytes"
    );
    // The same state's rows are shared: answered, and counted once.
    let (status, body) = service.request("GET", "/v1/sprio?format=json", None, "");
    assert_eq!(status, 200, "{body}");
    assert_eq!(metric(&service, "fairflow_response_held_table_bytes"), held);
    // Another state: its rows would be a second table.
    let tick = format!(r#"{{"op":"tick","t":{LATER}}}"#);
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), &tick);
    assert_eq!(status, 200, "{answer}");
    let (status, body) = service.request("GET", "/v1/sprio?format=json", None, "");
    assert_eq!(status, 503, "{body}");
    assert!(
        error_of(&body).contains("tables are held for slow readers"),
        "{body}"
    );
    eventually("the slow reader is dropped", || {
        service.request("GET", "/v1/sprio?format=json", None, "").0 == 200
    });
    eventually("nothing is held once every answer is sent", || {
        metric(&service, "fairflow_response_held_table_bytes") == 0.0
    });
    drop(slow);
    service.kill();
}

/// A `GET` of `path`: its status, its body's chunks (one per piece sent)
/// and the body.
fn pieces_of(address: SocketAddr, path: &str) -> (u16, usize, String) {
    let mut stream = send(address, "GET", path, "");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, mut rest) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    let (mut chunks, mut body) = (0, String::new());
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            break;
        }
        chunks += 1;
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    (status, chunks, body)
}

#[test]
fn long_tables_and_pages_are_sent_in_pieces_each_the_commands_answer() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), TOKEN);
    let service = Service::start(&dir.path().join("data"), &token, &[]);
    let (ok, log, err) = binary::run(&["gen", "--associations", "600", "--jobs", "2000"]);
    assert!(ok, "{err}");
    let events = dir.path().join("events.jsonl");
    std::fs::write(&events, &log).unwrap();
    let (status, answer) = service.request("POST", "/v1/events", Some(TOKEN), &log);
    assert_eq!(status, 200, "{answer}");
    let events = events.to_str().unwrap();
    // Each row is its own line in these forms; 256 rows make a piece.
    let cases: [(&str, &[&str]); 5] = [
        ("/v1/sshare?format=parsable", &["sshare", "-P"]),
        ("/v1/sshare?format=table", &["sshare"]),
        ("/v1/sshare?format=json", &["sshare", "--json"]),
        (
            "/v1/top?k=100000&format=parsable",
            &["top", "-k", "100000", "-P"],
        ),
        (
            "/v1/top?k=100000&format=json",
            &["top", "-k", "100000", "--json"],
        ),
    ];
    for (path, command) in cases {
        let (status, chunks, body) = pieces_of(service.address, path);
        assert_eq!(status, 200, "{path}: {body}");
        let mut args = command.to_vec();
        args.extend(["--events", events]);
        let (ok, expected, err) = binary::run(&args);
        assert!(ok, "{err}");
        assert_eq!(body, expected, "{path}");
        // Over 600 rows (the associations and their accounts; the pending
        // jobs), sent in pieces of 256.
        assert!(expected.lines().count() > 600, "{path}");
        assert!(chunks > 1, "{path}: one piece");
    }
    // slurmrestd's shares: one document, its rows in pieces.
    let (status, chunks, body) = pieces_of(service.address, "/slurm/v0.0.46/shares");
    assert_eq!(status, 200);
    let shares: Value = serde_json::from_str(&body).unwrap();
    let rows = shares["shares"]["shares"].as_array().unwrap().len();
    assert!(rows > 600 && chunks > 1, "{chunks} pieces of {rows} rows");
    service.kill();
}

#[test]
fn a_wide_sprio_field_is_a_400_and_never_rebuilds_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(dir.path(), 50, &[]);
    for _ in 0..2 {
        let (status, body) = service.request("GET", "/v1/sprio?o=%25.65536i", None, "");
        assert_eq!(status, 400, "{body}");
        let message = error_of(&body);
        assert!(message.contains("parameter `o`"), "{message}");
        assert!(message.contains("larger than 4096"), "{message}");
    }
    assert_eq!(metric(&service, "fairflow_engine_rebuilds_total"), 0.0);
    // The widest allowed field renders.
    let (status, body) = service.request("GET", "/v1/sprio?o=%25.4096i&noheader=true", None, "");
    assert_eq!(status, 200);
    assert!(
        body.lines().all(|line| line.len() == 4096),
        "every line padded to 4096"
    );
    // The command refuses it too, with and without the service.
    let url = format!("http://{}", service.address);
    let (ok, _, err) = binary::run(&["sprio", "-o", "%.70000i", "--server", &url]);
    assert!(
        !ok && err.contains("-o") && err.contains("larger than 4096"),
        "{err}"
    );
    let log = dir.path().join("log.jsonl");
    std::fs::write(&log, binary::run(&["gen", "--jobs", "5"]).1).unwrap();
    let (ok, _, err) = binary::run(&["sprio", "-o", "%.70000i", "--events", log.to_str().unwrap()]);
    assert!(!ok && err.contains("larger than 4096"), "{err}");
    assert_eq!(metric(&service, "fairflow_engine_rebuilds_total"), 0.0);
    service.kill();
}

#[test]
fn the_routers_own_errors_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let service = loaded(dir.path(), 5, &[]);
    let (status, body) = service.request("GET", "/v1/nowhere", None, "");
    assert_eq!(status, 404);
    assert!(error_of(&body).contains("/v1/nowhere"), "{body}");
    let (status, body) = service.request("DELETE", "/v1/top", None, "");
    assert_eq!(status, 405);
    error_of(&body);
    let (status, body) = service.request("GET", "/v1/top?k=abc", None, "");
    assert_eq!(status, 400);
    assert!(error_of(&body).contains("k"), "{body}");
    service.kill();
    // A small body limit: the refused body fits the socket's buffers, so the
    // client finishes writing before the service answers and closes.
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), TOKEN);
    let service = Service::start(
        &dir.path().join("data"),
        &token,
        &["--max-body-bytes", "1000"],
    );
    let big = "x".repeat(1_001);
    let (status, body) = service.request("POST", "/v1/whatif", None, &big);
    assert_eq!(status, 413);
    assert!(error_of(&body).contains("1000"), "{body}");
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), &big);
    assert_eq!(status, 413);
    error_of(&body);
    let long = format!("/v1/top?x={}", "a".repeat(20_000));
    let (status, body) = service.request("GET", &long, None, "");
    assert_eq!(status, 414);
    assert!(error_of(&body).contains("16384"), "{body}");
    // `/healthz` keeps its plain text.
    let (status, body) = service.request("GET", "/healthz", None, "");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    service.kill();
}
