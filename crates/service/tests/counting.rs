//! The write path counts right on every way in (HTTP `POST /v1/events`, the
//! socket tap, a followed `jobcomp/filetxt` file), on both real engines: every
//! line received is accepted or rejected exactly once, the answer says so,
//! and the Prometheus counters only go up, by those numbers.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use fairflow_engine::{BatchEngine, IncrementalEngine};
use fairflow_model::Config;
use fairflow_serve::OutputFormat;
use fairflow_service::backend::{Backend, Query};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_service::taps::{follow_jobcomp_in, serve_stream, StreamLimits};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

mod support;
use support::{start_applier, Running};

const TOKEN: &str = "counting-token";

/// One account with two users: three valid events.
const TREE: &str = "{\"op\":\"account\",\"t\":1699990000,\"name\":\"phys\",\"shares\":1}\n\
{\"op\":\"user\",\"t\":1699990000,\"user\":\"alice\",\"account\":\"phys\",\"shares\":1}\n\
{\"op\":\"user\",\"t\":1699990000,\"user\":\"bob\",\"account\":\"phys\",\"shares\":1}\n";

/// Four lines of events (a blank line and a comment are not): two valid, one
/// that is not JSON (line 2), one impossible (an unknown account, line 3).
const MIXED: &str =
    "{\"op\":\"usage\",\"t\":1700000100,\"account\":\"phys\",\"user\":\"alice\",\"amount\":10}\n\
this is not json\n\
{\"op\":\"usage\",\"t\":1700000100,\"account\":\"ghost\",\"user\":\"alice\",\"amount\":10}\n\
\n\
# a comment\n\
{\"op\":\"usage\",\"t\":1700000100,\"account\":\"phys\",\"user\":\"bob\",\"amount\":20}\n";

/// A counter's value in the metrics text.
fn counter(metrics: &Metrics, name: &str) -> u64 {
    let text = metrics.render(None, 0);
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{name}` in\n{text}"))
}

fn counts(metrics: &Metrics) -> (u64, u64) {
    (
        counter(metrics, "fairflow_events_applied_total"),
        counter(metrics, "fairflow_events_rejected_total"),
    )
}

fn start_with<B: Backend>(backend: B) -> Running {
    start_applier(backend, 1_000)
}

fn start(engine: &str) -> Running {
    match engine {
        "batch" => start_with(EngineBackend::new(Box::new(BatchEngine::new(
            Config::default(),
        )))),
        _ => start_with(EngineBackend::new(Box::new(
            IncrementalEngine::start(1, Config::default()).unwrap(),
        ))),
    }
}

/// POST `body` through the router; the JSON answer.
async fn post(running: &Running, body: &str) -> Value {
    let config = HttpConfig {
        write_token: Some(TOKEN.into()),
        ..HttpConfig::default()
    };
    let router = http::router(running.applier.clone(), running.metrics.clone(), config);
    let request = Request::post("/v1/events")
        .header("Authorization", format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn rejected_lines(answer: &Value) -> Vec<u64> {
    answer["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect()
}

async fn http_counts(engine: &str) {
    let running = start(engine);
    let answer = post(&running, TREE).await;
    assert_eq!(answer["accepted"], 3, "{engine}: {answer}");
    assert_eq!(counts(&running.metrics), (3, 0), "{engine}");
    let answer = post(&running, MIXED).await;
    // Lines 1 and 6 apply; 2 (not JSON) and 3 (unknown account) are each
    // rejected once; 4 and 5 are a blank line and a comment.
    assert_eq!(answer["accepted"], 2, "{engine}: {answer}");
    assert_eq!(rejected_lines(&answer), [2, 3], "{engine}: {answer}");
    assert_eq!(counts(&running.metrics), (5, 2), "{engine}");
    // A body that is wholly garbage: nothing accepted, each line once, and
    // the counters still only go up.
    let answer = post(&running, "nope\n{\"op\":\"zap\"}\n").await;
    assert_eq!(answer["accepted"], 0, "{engine}: {answer}");
    assert_eq!(rejected_lines(&answer), [1, 2], "{engine}: {answer}");
    assert_eq!(counts(&running.metrics), (5, 4), "{engine}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_posts_count_each_line_once_on_the_batch_engine() {
    http_counts("batch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_posts_count_each_line_once_on_the_incremental_engine() {
    http_counts("incremental").await;
}

async fn tap_counts(engine: &str) {
    let running = start(engine);
    let (client, server) = tokio::io::duplex(1 << 16);
    let session = tokio::spawn(serve_stream(
        server,
        running.applier.clone(),
        None,
        StreamLimits::default(),
    ));
    let (mut read, mut write) = tokio::io::split(client);
    write
        .write_all(format!("{TREE}{MIXED}").as_bytes())
        .await
        .unwrap();
    write.shutdown().await.unwrap();
    let mut answer = String::new();
    read.read_to_string(&mut answer).await.unwrap();
    session.await.unwrap().unwrap();
    let (mut accepted, mut rejected) = (0, 0);
    for line in answer.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        accepted += v["accepted"].as_u64().unwrap();
        rejected += v["rejected"].as_array().unwrap().len() as u64;
    }
    // 3 + 4 lines of events: 5 accepted, 2 rejected, whatever the batching.
    assert_eq!((accepted, rejected), (5, 2), "{engine}: {answer}");
    assert_eq!(counts(&running.metrics), (5, 2), "{engine}");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_tap_counts_each_line_once_on_both_engines() {
    tap_counts("batch").await;
    tap_counts("incremental").await;
}

/// A record as `jobcomp/filetxt` writes it, with `NAME` and `END` to fill in.
const RECORD: &str = "JobId=7 UserId=alice(1001) GroupId=users(100) Name=NAME JobState=COMPLETED \
    Partition=batch TimeLimit=60 StartTime=2023-11-14T22:00:00 EndTime=END NodeList=n01 NodeCnt=1 \
    ProcCnt=2 WorkDir=/home/alice ReservationName= Tres=cpu=2,node=1,billing=2 Account=phys QOS=normal \
    WcKey= Cluster=c SubmitTime=2023-11-14T21:00:00 EligibleTime=2023-11-14T21:00:00 \
    DerivedExitCode=0:0 ExitCode=0:0";

async fn jobcomp_counts(engine: &str) {
    let running = start(engine);
    assert_eq!(post(&running, TREE).await["accepted"], 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobcomp.log");
    // Written by a slurmctld at UTC+01:00: 22:00 to 23:00 local is
    // 21:00Z to 22:00Z, so the job ends at 1_700_000_000 - 800 (22:13:20Z
    // is 1_700_000_000) = 1_699_999_200, and charges 2 x 3600 = 7200.
    let good = RECORD
        .replace("NAME", "my job")
        .replace("END", "2023-11-14T23:00:00");
    let bad = RECORD
        .replace("NAME", "broken")
        .replace("END", "2023-11-14T25:00:00");
    std::fs::write(&path, format!("{good}\n{bad}\n")).unwrap();
    let zone = chrono::FixedOffset::east_opt(3_600).unwrap();
    let follower = tokio::spawn(follow_jobcomp_in(
        path,
        running.applier.clone(),
        Duration::from_millis(20),
        zone,
    ));
    for _ in 0..500 {
        if counts(&running.metrics) != (3, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(counts(&running.metrics), (4, 1), "{engine}");
    let gauges = running.applier.gauges().await.unwrap();
    assert_eq!(gauges.now, 1_699_999_200, "{engine}");
    let sshare = running
        .applier
        .read(Query::Sshare {
            format: OutputFormat::Parsable,
            selection: Default::default(),
        })
        .await
        .unwrap();
    let alice = sshare
        .lines()
        .find(|l| l.contains("|alice|"))
        .unwrap_or_else(|| panic!("{sshare}"));
    assert!(alice.contains("|7200|"), "{engine}: {sshare}");
    follower.abort();
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_jobcomp_file_counts_names_with_spaces_and_its_zone() {
    jobcomp_counts("batch").await;
    jobcomp_counts("incremental").await;
}
