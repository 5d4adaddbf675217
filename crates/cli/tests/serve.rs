//! `fairflow serve` end to end on loopback: events written over HTTP and the
//! TCP stream tap, a followed `jobcomp/filetxt` file, and every read (top,
//! sshare, sprio, explain, position) equal to values worked out by hand for
//! the same events ([`hand`]), and the commands with `--server` equal to the
//! same commands on a log; a clean stop and a restart keep the state.

#[path = "support/serve_hand.rs"]
mod hand;
#[path = "support/service.rs"]
mod service;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fairflow_engine::{BatchEngine, Engine};
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_serve::{slurm_json, sshare};
use service::{free_port, Service};

const TOKEN: &str = "a-long-enough-token";

const HTTP_EVENTS: &str = r#"{"op":"config","t":1700000000,"set":{"PriorityWeightFairshare":100000,"PriorityWeightAge":1000,"PriorityDecayHalfLife":0}}
{"op":"account","t":1700000000,"name":"physics","shares":40}
{"op":"account","t":1700000000,"name":"chem","shares":60}
{"op":"user","t":1700000000,"user":"alice","account":"physics"}
{"op":"user","t":1700000000,"user":"bob","account":"chem"}
{"op":"usage","t":1700000100,"account":"physics","user":"alice","amount":3600}
{"op":"submit","t":1700000200,"job":"1","user":"alice","account":"physics","tres":{"cpu":4}}
"#;

const TAP_EVENTS: &str = r#"{"op":"submit","t":1700000300,"job":"2","user":"bob","account":"chem","tres":{"cpu":8}}
{"op":"submit","t":1700000300,"job":"3","user":"bob","account":"chem"}
"#;

// bob ran 2 CPUs for an hour in chem: 7200 CPU-seconds, ending at 1700000400.
const JOBCOMP: &str = "JobId=77 UserId=bob(1002) GroupId=users(100) Name=x JobState=COMPLETED Partition=batch \
TimeLimit=60 StartTime=2023-11-14T21:20:00 EndTime=2023-11-14T22:20:00 NodeList=n1 NodeCnt=1 ProcCnt=2 \
WorkDir=/tmp ReservationName= Account=chem QOS=normal WcKey= Cluster=c SubmitTime=2023-11-14T21:00:00 \
EligibleTime=2023-11-14T21:00:00 DerivedExitCode=0:0 ExitCode=0:0\n";

fn wait_for(mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < Duration::from_secs(20), "timed out");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn writes_from_every_source_and_reads_equal_to_values_worked_out_by_hand_incremental() {
    writes_from_every_source_and_reads_equal_to_values_worked_out_by_hand(
        &["--workers", "2"],
        "engine incremental, 2 workers",
        (&["--engine", "batch"], "engine batch"),
    );
}

#[test]
fn writes_from_every_source_and_reads_equal_to_values_worked_out_by_hand_batch() {
    writes_from_every_source_and_reads_equal_to_values_worked_out_by_hand(
        &["--engine", "batch"],
        "engine batch",
        (&[], "engine incremental, 1 worker"),
    );
}

/// The whole exchange on the engine `engine` selects; after a clean stop the
/// data directory is served again by the same engine (its start line says
/// `banner`), then by the other engine (`other`: its flags and start line;
/// both engines read one checkpoint format).
fn writes_from_every_source_and_reads_equal_to_values_worked_out_by_hand(
    engine: &[&str],
    banner: &str,
    other: (&[&str], &str),
) {
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let jobcomp = dir.path().join("jobcomp.log");
    std::fs::write(&jobcomp, "").unwrap();
    let tap_port = free_port();
    let data = dir.path().join("data");
    let tap = format!("127.0.0.1:{tap_port}");
    let service = Service::start(
        &data,
        &token_file,
        &[
            &[
                "--tap-tcp",
                &tap,
                "--follow-jobcomp",
                jobcomp.to_str().unwrap(),
            ][..],
            engine,
        ]
        .concat(),
    );
    assert!(service.banner.contains(banner), "{}", service.banner);

    assert_eq!(
        service.request("POST", "/v1/events", None, HTTP_EVENTS).0,
        401
    );
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), HTTP_EVENTS);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"accepted\":7"), "{body}");

    let mut stream = TcpStream::connect(&tap).unwrap();
    stream
        .write_all(format!("{{\"token\":\"{TOKEN}\"}}\n{TAP_EVENTS}").as_bytes())
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut accepted = 0;
    while accepted < 2 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        accepted += answer["accepted"].as_u64().unwrap();
    }

    std::fs::OpenOptions::new()
        .append(true)
        .open(&jobcomp)
        .unwrap()
        .write_all(JOBCOMP.as_bytes())
        .unwrap();
    wait_for(|| {
        service
            .request("GET", "/v1/sshare", None, "")
            .1
            .contains("7200")
    });

    let (_, got) = service.request("GET", "/v1/sshare", None, "");
    hand::assert_json(&got, &hand::sshare());
    // slurmrestd's path answers Slurm's own JSON of the same table.
    let (_, got) = service.request("GET", slurm_json::SHARES_PATH, None, "");
    hand::assert_slurm_shares(&got);
    let (_, got) = service.request("GET", "/v1/sprio", None, "");
    hand::assert_sprio(&got);
    let (_, got) = service.request("GET", "/v1/top?k=2", None, "");
    hand::assert_json(&got, &hand::top_two());
    let (_, got) = service.request("GET", "/v1/jobs/2/explain", None, "");
    hand::assert_explain_of_job_2(&got);
    assert_eq!(
        service.request("GET", "/v1/jobs/999/explain", None, "").0,
        404
    );
    // A job's place and a page of the queue.
    let (_, got) = service.request("GET", "/v1/jobs/2/position", None, "");
    hand::assert_position_of_job_2(&got);
    let (_, got) = service.request("GET", "/v1/jobs/2/position?format=text", None, "");
    assert!(got.contains("rank 2"), "{got}");
    // No account listed: the one ahead is still counted.
    let (_, got) = service.request("GET", "/v1/jobs/2/position?top_accounts=0", None, "");
    let parsed: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(parsed["ahead_by_account"], serde_json::json!({}), "{got}");
    assert_eq!(parsed["ahead_accounts"], 1, "{got}");
    let (status, got) = service.request("GET", "/v1/jobs/2/position?top_accounts=some", None, "");
    assert_eq!(status, 400, "{got}");
    assert!(got.contains("top_accounts"), "{got}");
    assert_eq!(
        service.request("GET", "/v1/jobs/999/position", None, "").0,
        404
    );
    let (_, got) = service.request("GET", "/v1/top?k=2&offset=1", None, "");
    hand::assert_json(&got, &hand::page_from_second());
    let (status, metrics) = service.request("GET", "/metrics", None, "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("fairflow_events_applied_total 10"),
        "{metrics}"
    );
    assert!(metrics.contains("fairflow_pending_jobs 3"), "{metrics}");

    // The commands answer the same with `--server` as with the same events in a log.
    let log = dir.path().join("same.jsonl");
    std::fs::write(
        &log,
        format!(
            "{HTTP_EVENTS}{TAP_EVENTS}{}\n",
            r#"{"op":"usage","t":1700000400,"account":"chem","user":"bob","amount":7200}"#
        ),
    )
    .unwrap();
    let server = format!("http://{}", service.address);
    for command in [
        &["sshare", "-P"][..],
        &["sprio", "-n", "-P"],
        &["sprio", "--json"],
        &["top", "-k", "2"],
        &["explain", "2"],
        &["position", "2"],
        &["position", "2", "--json"],
        &["top", "-k", "1", "--offset", "1"],
        // Slurm's selections and shapes, which the service applies (as query
        // parameters) or the command applies to the service's answer.
        &["sshare", "-P", "-A", "chem", "-o", "User,RawUsage", "-n"],
        &["sshare", "-u", "alice"],
        &["sshare", "--json", "--slurm", "-A", "chem"],
        &[
            "sprio",
            "-P",
            "-u",
            "bob",
            "-j",
            "2,3",
            "-o",
            "jobid,priority",
        ],
        &["sprio", "-h", "-A", "chem"],
        &["sprio", "-l"],
        &["sprio", "-w", "-n"],
        &[
            "sprio",
            "-h",
            "-o",
            "%.15i %9r %.10Y %.10n|%u",
            "-A",
            "chem",
        ],
        &["top", "-k", "5", "-u", "bob"],
        &["top", "-A", "physics", "-P"],
    ] {
        let run = |source: &[&str]| {
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
                .args(command)
                .args(source)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{command:?} {source:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap()
        };
        assert_eq!(
            run(&["--server", &server]),
            run(&["--events", log.to_str().unwrap()]),
            "{command:?}"
        );
    }

    // A clean stop, then a restart from the log and checkpoint: the same state.
    let before = service.request("GET", "/v1/sshare", None, "").1;
    assert!(service.terminate().success());
    let service = Service::start(&data, &token_file, engine);
    assert_eq!(service.request("GET", "/v1/sshare", None, "").1, before);
    // The other engine serves the same data directory with the same state:
    // both engines write and read one checkpoint format.
    assert!(service.terminate().success());
    let service = Service::start(&data, &token_file, other.0);
    assert!(service.banner.contains(other.1), "{}", service.banner);
    assert_eq!(service.request("GET", "/v1/sshare", None, "").1, before);
    let (_, got) = service.request("GET", "/v1/top?k=2", None, "");
    hand::assert_json(&got, &hand::top_two());
    service.kill();
}

/// Run `fairflow serve` with `args` and expect it to refuse to start: it must
/// exit non-zero within 20 s (one still running is killed and fails the
/// test). Returns its standard error.
fn refused_start(args: &[&str]) -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .arg("serve")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fairflow serve {args:?} started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    stderr
}

#[test]
fn a_token_file_others_can_read_or_change_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let data = dir.path().join("data");
    for mode in [0o640, 0o604, 0o620, 0o666] {
        std::fs::set_permissions(
            &token_file,
            std::os::unix::fs::PermissionsExt::from_mode(mode),
        )
        .unwrap();
        let stderr = refused_start(&[
            "--listen",
            &listen,
            "--data-dir",
            data.to_str().unwrap(),
            "--token-file",
            token_file.to_str().unwrap(),
        ]);
        assert!(stderr.contains("chmod 600"), "mode {mode:o}: {stderr}");
        assert!(
            stderr.contains(&format!("{mode:o}")),
            "mode {mode:o}: {stderr}"
        );
    }
}

#[test]
fn a_listen_beyond_loopback_with_open_reads_needs_allow_remote_reads() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // 192.0.2.1 (TEST-NET-1) is not this machine's: nothing is ever bound.
    let listen = ["--listen", "192.0.2.1:7471", "--data-dir"];
    let stderr = refused_start(&[&listen[..], &[data.to_str().unwrap()]].concat());
    assert!(stderr.contains("--allow-remote-reads"), "{stderr}");
    assert!(stderr.contains("--reads-need-token"), "{stderr}");
    // With the flag, the refusal is gone (it gets as far as binding, which
    // fails here) and a warning says reads are open.
    let stderr = refused_start(
        &[
            &listen[..],
            &[data.to_str().unwrap(), "--allow-remote-reads"],
        ]
        .concat(),
    );
    assert!(stderr.contains("reads are open to anyone"), "{stderr}");
    assert!(
        stderr.contains("cannot listen on 192.0.2.1:7471"),
        "{stderr}"
    );
}

#[test]
fn serve_takes_a_config_file_and_the_command_line_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let data = dir.path().join("data");
    let config = dir.path().join("serve.toml");
    // The file alone: the batch engine (the default is incremental), and
    // --metrics-associations all: the empty tree's root row is exported.
    std::fs::write(
        &config,
        "engine = \"batch\"\nmax_body_bytes = 1000000\nmetrics_associations = \"all\"\n",
    )
    .unwrap();
    let service = Service::start(&data, &token_file, &["--config", config.to_str().unwrap()]);
    assert!(
        service.banner.contains("engine batch"),
        "{}",
        service.banner
    );
    let (_, metrics) = service.request("GET", "/metrics", None, "");
    assert!(
        metrics.contains("fairflow_association_raw_usage{account=\"root\",user=\"\"} 0"),
        "{metrics}"
    );
    assert!(service.terminate().success());
    let stderr = refused_start(&["--metrics-associations", "many"]);
    assert!(
        stderr.contains("`many` is neither a number of associations nor `all`"),
        "{stderr}"
    );
    // A flag given on the command line overrides the file's.
    let service = Service::start(
        &data,
        &token_file,
        &[
            "--config",
            config.to_str().unwrap(),
            "--engine",
            "incremental",
        ],
    );
    assert!(
        service.banner.contains("engine incremental"),
        "{}",
        service.banner
    );
    service.kill();
    // The file's listen address beyond loopback is checked as the flag's.
    std::fs::write(&config, "listen = \"0.0.0.0:9\"\n").unwrap();
    let stderr = refused_start(&["--config", config.to_str().unwrap()]);
    assert!(stderr.contains("--listen 0.0.0.0:9"), "{stderr}");
    // An unknown key is an error naming the file and the key.
    std::fs::write(&config, "data_dir = \"/tmp/x\"\nlisten_on = \"x\"\n").unwrap();
    let stderr = refused_start(&["--config", config.to_str().unwrap()]);
    assert!(
        stderr.contains("serve.toml: unknown key `listen_on`"),
        "{stderr}"
    );
}

/// By default (and with `--calc-period-ticks GRACE`) the service settles the
/// wall clock's last `PriorityCalcPeriod` boundary in a logged tick of its
/// own, with no event after it. By hand: alice's job runs 2 CPUs from `t0`, with no decay, so
/// her raw usage at the boundary `b` is `2 * (b - t0)` CPU-seconds (before a
/// tick nothing is settled). The state equals the oracle fed the same
/// events and `{"op":"tick","t":b}`, and survives a restart without ticks.
#[test]
fn calc_period_ticks_by_default_settle_the_boundary_without_an_event() {
    const PERIOD_SECS: i64 = 3600;
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Three periods back, on a boundary (`PriorityCalcPeriod` is in minutes).
    let t0 = (wall / PERIOD_SECS) * PERIOD_SECS - 3 * PERIOD_SECS;
    let events = format!(
        r#"{{"op":"config","t":{t0},"set":{{"PriorityCalcPeriod":60,"PriorityDecayHalfLife":0,"PriorityWeightFairshare":1000}}}}
{{"op":"account","t":{t0},"name":"a","shares":1}}
{{"op":"user","t":{t0},"user":"alice","account":"a"}}
{{"op":"submit","t":{t0},"job":"1","user":"alice","account":"a","tres":{{"cpu":2}}}}
{{"op":"start","t":{t0},"job":"1"}}
"#
    );
    let expected = |boundary: i64| -> String {
        let mut oracle = BatchEngine::new(Config::default());
        let all = format!("{events}{{\"op\":\"tick\",\"t\":{boundary}}}\n");
        let rejected = oracle
            .apply(read_events(all.as_bytes()).map(Result::unwrap).collect())
            .unwrap();
        assert!(rejected.is_empty(), "{rejected:?}");
        let table = oracle.fairshare().unwrap();
        let alice = table
            .rows
            .iter()
            .find(|row| row.user.as_deref() == Some("alice"))
            .expect("alice's row");
        assert_eq!(alice.raw_usage, 2 * (boundary - t0) as u64);
        sshare::render_json(&table)
    };
    let event_time = |service: &Service| -> i64 {
        let (_, metrics) = service.request("GET", "/metrics", None, "");
        metrics
            .lines()
            .find(|line| line.starts_with("fairflow_event_time_seconds "))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|value| value.parse::<f64>().ok())
            .map_or(0, |value| value as i64)
    };
    // The service's time and its table, read at one state (a boundary may
    // pass between two reads).
    let settled = |service: &Service| -> (i64, String) {
        loop {
            let before = event_time(service);
            let (_, table) = service.request("GET", "/v1/sshare", None, "");
            if event_time(service) == before {
                return (before, table);
            }
        }
    };
    let data = dir.path().join("data");
    let service = Service::start(&data, &token_file, &[]);
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), &events);
    assert_eq!(status, 200, "{body}");
    wait_for(|| event_time(&service) > t0);
    let (boundary, got) = settled(&service);
    assert_eq!(
        boundary % PERIOD_SECS,
        0,
        "a tick lands on a boundary: {boundary}"
    );
    assert!(
        boundary >= t0 + 3 * PERIOD_SECS,
        "the last boundary: {boundary}"
    );
    assert_eq!(got, expected(boundary));

    // The tick was logged: a restart without ticks has the same state.
    service.terminate();
    let service = Service::start(&data, &token_file, &["--no-calc-period-ticks"]);
    let (boundary, got) = settled(&service);
    assert!(boundary >= t0 + 3 * PERIOD_SECS, "{boundary}");
    assert_eq!(got, expected(boundary));
}

/// The default ticker leaves a log of the past alone: events of November
/// 2023 under a one-hour `PriorityCalcPeriod` are years behind the wall
/// clock, so no tick of today is logged and a later event of 2023 is still
/// accepted (a tick would refuse it as time going backwards).
#[test]
fn the_default_ticker_never_cuts_a_log_of_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let service = Service::start(&dir.path().join("data"), &token_file, &[]);
    let events = r#"{"op":"config","t":1700000000,"set":{"PriorityCalcPeriod":60}}
{"op":"account","t":1700000000,"name":"a","shares":1}
{"op":"user","t":1700000000,"user":"alice","account":"a"}
{"op":"submit","t":1700000000,"job":"1","user":"alice","account":"a","tres":{"cpu":2}}
"#;
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), events);
    assert_eq!(status, 200, "{body}");
    // The ticker looks once a second: give it three looks.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let later = r#"{"op":"start","t":1700000100,"job":"1"}
"#;
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), later);
    assert_eq!(status, 200, "{body}");
    let outcome: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(outcome["accepted"], 1, "{body}");
    assert_eq!(
        outcome["rejected"].as_array().map(Vec::len),
        Some(0),
        "{body}"
    );
}

/// Files named at start must be what they claim: a FIFO (which would block
/// the start until someone writes to it) or a device (which never ends) is
/// refused naming the flag's file, and so are a token file of two lines and a
/// config value of the wrong type (named by the file and its key).
#[test]
fn fifos_devices_two_line_tokens_and_mistyped_config_values_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success(), "mkfifo (coreutils) makes a FIFO");
    let fifo = fifo.to_str().unwrap();
    let stderr = refused_start(&["--data-dir", data, "--token-file", fifo]);
    assert!(
        stderr.contains("fifo: is a FIFO, not a regular file"),
        "{stderr}"
    );
    let stderr = refused_start(&["--data-dir", data, "--config", fifo]);
    assert!(
        stderr.contains("fifo: is a FIFO, not a regular file"),
        "{stderr}"
    );
    let stderr = refused_start(&["--data-dir", data, "--config", "/dev/zero"]);
    assert!(
        stderr.contains("/dev/zero: is a device, not a regular file"),
        "{stderr}"
    );
    let stderr = refused_start(&["--data-dir", data, "--follow-jobcomp", fifo]);
    assert!(stderr.contains("--follow-jobcomp: "), "{stderr}");
    assert!(stderr.contains("is a FIFO, not a regular file"), "{stderr}");

    let two_lines = service::token_file(dir.path(), &format!("{TOKEN}\nsecond-line"));
    let stderr = refused_start(&[
        "--data-dir",
        data,
        "--token-file",
        two_lines.to_str().unwrap(),
    ]);
    assert!(
        stderr.contains("holds 2 lines; it must hold the token alone on one line"),
        "{stderr}"
    );
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, "workers = \"two\"\n").unwrap();
    let stderr = refused_start(&["--config", config.to_str().unwrap()]);
    assert!(
        stderr.contains("serve.toml: key `workers`: invalid value 'two' for '--workers <N>'"),
        "{stderr}"
    );
}

/// `explain ID --server` names the job it was given, whatever the id holds:
/// `1%32` is not job `12`, and `a/b`, `x?y`, `x#y`, an array task range
/// `12345_[1-3]` (brackets are not allowed in a URL path) and a SLUID-like
/// id are found.
#[test]
fn explain_and_position_over_the_server_encode_the_job_id() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let service = Service::start(&dir.path().join("data"), &token_file, &[]);
    let ids = [
        "12",
        "1%32",
        "a/b",
        "x?y",
        "x#y",
        "12345_[1-3]",
        "sC6VQ6U0G1KAB7",
    ];
    let mut events = String::from(
        "{\"op\":\"account\",\"t\":1700000000,\"name\":\"a\",\"shares\":1}\n\
         {\"op\":\"user\",\"t\":1700000000,\"user\":\"u\",\"account\":\"a\"}\n",
    );
    for id in ids {
        events.push_str(&format!(
            "{{\"op\":\"submit\",\"t\":1700000001,\"job\":\"{id}\",\"user\":\"u\",\"account\":\"a\"}}\n"
        ));
    }
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), &events);
    assert_eq!(status, 200, "{body}");
    let server = format!("http://{}", service.address);
    for id in ids {
        for command in ["explain", "position"] {
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
                .args([command, id, "--json", "--server", &server])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{command} {id}: {stderr}");
            let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            // explain answers the job's row; position nests it under `job`.
            let named = answer["job_id"]
                .as_str()
                .or(answer["job"]["job_id"].as_str());
            assert_eq!(named, Some(id), "{command} {id}: {answer}");
        }
    }
    service.kill();
}

/// A job submitted with Slurm 26.05's SLUID is found by it (in any case
/// Slurm reads) as by its id: `explain`, `position` and `sprio -j` over
/// `--server`, and `explain` on a log under either engine; the answers
/// carry its `sluid`, and `sprio -o %s` prints it. An id that reads as a
/// SLUID stays its own job's, even when another job holds that SLUID (the
/// SLUID-like id of the test above, `sC6VQ6U0G1KAB7`, has a `U`: no SLUID).
#[test]
fn a_sluid_finds_its_job_over_the_server_and_on_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = service::token_file(dir.path(), TOKEN);
    let service = Service::start(&dir.path().join("data"), &token_file, &[]);
    let events = "{\"op\":\"account\",\"t\":1700000000,\"name\":\"a\",\"shares\":1}\n\
         {\"op\":\"user\",\"t\":1700000000,\"user\":\"u\",\"account\":\"a\"}\n\
         {\"op\":\"submit\",\"t\":1700000001,\"job\":\"77\",\"user\":\"u\",\"account\":\"a\",\"sluid\":\"s00dkdvdna0005\"}\n\
         {\"op\":\"submit\",\"t\":1700000001,\"job\":\"sC6VQ6T0G1KAB7\",\"user\":\"u\",\"account\":\"a\"}\n\
         {\"op\":\"submit\",\"t\":1700000001,\"job\":\"78\",\"user\":\"u\",\"account\":\"a\",\"sluid\":\"sC6VQ6T0G1KAB7\"}\n\
         {\"op\":\"submit\",\"t\":1700000001,\"job\":\"79\",\"user\":\"u\",\"account\":\"a\",\"sluid\":\"s00DKDVDNA0005\"}\n";
    let (status, body) = service.request("POST", "/v1/events", Some(TOKEN), events);
    assert_eq!(status, 200, "{body}");
    // Job 79's SLUID is job 77's: rejected, naming the line and the field.
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["rejected"][0]["line"], 6, "{body}");
    assert_eq!(answer["rejected"][0]["field"], "sluid", "{body}");
    let server = format!("http://{}", service.address);
    let fairflow = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairflow"))
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        String::from_utf8(output.stdout).unwrap()
    };
    let json = |text: String| serde_json::from_str::<serde_json::Value>(&text).unwrap();
    for key in ["s00DKDVDNA0005", "S00dkdvdnaOO05"] {
        let why = json(fairflow(&["explain", key, "--json", "--server", &server]));
        assert_eq!(
            (why["job_id"].as_str(), why["sluid"].as_str()),
            (Some("77"), Some("s00DKDVDNA0005"))
        );
        let place = json(fairflow(&["position", key, "--json", "--server", &server]));
        assert_eq!(place["job"]["job_id"], "77");
        assert_eq!(place["job"]["sluid"], "s00DKDVDNA0005");
    }
    let by_id = json(fairflow(&[
        "explain",
        "sC6VQ6T0G1KAB7",
        "--json",
        "--server",
        &server,
    ]));
    assert_eq!(by_id["job_id"], "sC6VQ6T0G1KAB7");
    assert_eq!(by_id.get("sluid"), None);
    let sprio = fairflow(&[
        "sprio",
        "-j",
        "s00dkdvdna0005,78",
        "-o",
        "%i|%s",
        "--server",
        &server,
    ]);
    assert_eq!(sprio, "JOBID|SLUID\n77|s00DKDVDNA0005\n78|sC6VQ6T0G1KAB7\n");
    service.kill();

    let log = dir.path().join("events.jsonl");
    std::fs::write(&log, events).unwrap();
    for engine in ["batch", "incremental"] {
        let log = log.to_str().unwrap();
        let why = json(fairflow(&[
            "explain",
            "s00dkdvdna0005",
            "--json",
            "--events",
            log,
            "--engine",
            engine,
        ]));
        assert_eq!(
            (why["job_id"].as_str(), why["sluid"].as_str()),
            (Some("77"), Some("s00DKDVDNA0005"))
        );
    }
}
