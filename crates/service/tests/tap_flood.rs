//! The taps under a flood (issue 16, item 6, for taps): memory stays bounded
//! and HTTP writers keep their turn.
//! - a `jobcomp/filetxt` file that grows by 16 MiB at once is read in steps of
//!   at most `FOLLOW_READ_BYTES` (1 MiB) taken from the write budget: the heap
//!   this test binary holds above its level before the flood stays a few MiB. Before, the follower read all that was
//!   appended at once and applied it as one batch: the whole file, its lines
//!   and their events were held together (tens of MiB, growing with the
//!   flood);
//! - socket taps flooding with more lines than the write budget holds share
//!   that budget with `POST /v1/events`: the bytes held never exceed it, the
//!   HTTP writes made during the flood are all applied, and a connection over
//!   the tap's connection cap is answered with an error line and closed.
//!   Before, tap batches took nothing from the budget and tap connections
//!   were unbounded in number.
//!
//! The tests share the allocator's count, so they run one at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use fairflow_engine::BatchEngine;
use fairflow_model::Config;
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_service::taps::{admit_stream, follow_jobcomp_in, StreamLimits, StreamSlots};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tower::ServiceExt;

mod support;
use support::{start_applier, Running};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The bytes allocated and not freed (jemalloc's `stats.allocated`).
fn allocated() -> usize {
    tikv_jemalloc_ctl::epoch::advance().unwrap();
    tikv_jemalloc_ctl::stats::allocated::read().unwrap()
}

/// Samples [`allocated`] every millisecond on its own thread until stopped;
/// the most it saw.
struct PeakSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl PeakSampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut peak = allocated();
                while !stop.load(Ordering::Relaxed) {
                    peak = peak.max(allocated());
                    std::thread::sleep(Duration::from_millis(1));
                }
                peak
            }
        });
        PeakSampler { stop, thread }
    }

    fn peak(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// One test at a time: they share the counters.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MIB: usize = 1 << 20;

const TOKEN: &str = "tap-flood-token";

/// One account with one user.
const TREE: &str = "{\"op\":\"account\",\"t\":1699990000,\"name\":\"phys\",\"shares\":1}\n\
{\"op\":\"user\",\"t\":1699990000,\"user\":\"alice\",\"account\":\"phys\",\"shares\":1}\n";

/// A record as `jobcomp/filetxt` writes it (about 480 bytes), `ID` to fill in.
const RECORD: &str = "JobId=ID UserId=alice(1001) GroupId=users(100) Name=flood JobState=COMPLETED \
    Partition=batch TimeLimit=60 StartTime=2023-11-14T22:00:00 EndTime=2023-11-14T23:00:00 \
    NodeList=n01 NodeCnt=1 ProcCnt=2 WorkDir=/home/alice ReservationName= \
    Tres=cpu=2,node=1,billing=2 Account=phys QOS=normal WcKey= Cluster=c \
    SubmitTime=2023-11-14T21:00:00 EligibleTime=2023-11-14T21:00:00 DerivedExitCode=0:0 ExitCode=0:0";

fn applied(metrics: &Metrics) -> u64 {
    let text = metrics.render(None, 0);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("fairflow_events_applied_total ")?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn start() -> Running {
    let backend = EngineBackend::new(Box::new(BatchEngine::new(Config::default())));
    start_applier(backend, 1_000_000)
}

impl Running {
    async fn wait_applied(&self, count: u64) {
        for _ in 0..6_000 {
            if applied(&self.metrics) >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "only {} of {count} events applied after 60 s",
            applied(&self.metrics)
        );
    }
}

/// POST `body` through `router`; the status and the answer.
async fn post(router: &axum::Router, body: String) -> (u16, serde_json::Value) {
    let request = Request::post("/v1/events")
        .header("Authorization", format!("Bearer {TOKEN}"))
        .body(Body::from(body))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), MIB)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_jobcomp_file_is_read_in_bounded_steps() {
    let _serial = SERIAL.lock().await;
    let running = start();
    let router = http::router(
        running.applier.clone(),
        running.metrics.clone(),
        HttpConfig {
            write_token: Some(TOKEN.into()),
            ..HttpConfig::default()
        },
    );
    assert_eq!(post(&router, TREE.to_string()).await.1["accepted"], 2);
    // 35,000 records, about 16.8 MB, appended before the follower's first poll.
    let records = 35_000u64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobcomp.log");
    {
        use std::io::Write;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for id in 0..records {
            writeln!(file, "{}", RECORD.replace("ID", &id.to_string())).unwrap();
        }
    }
    let file_bytes = std::fs::metadata(&path).unwrap().len() as usize;
    let baseline = allocated();
    let sampler = PeakSampler::start();
    let zone = chrono::FixedOffset::east_opt(0).unwrap();
    let follower = tokio::spawn(follow_jobcomp_in(
        path,
        running.applier.clone(),
        Duration::from_millis(20),
        zone,
    ));
    running.wait_applied(2 + records).await;
    follower.abort();
    let _ = follower.await;
    let peak_above = sampler.peak().saturating_sub(baseline);
    let after_above = allocated().saturating_sub(baseline);
    eprintln!(
        "jobcomp flood: {file_bytes} bytes, {records} records; heap above the level before: \
         peak {:.1} MiB, after {:.1} MiB",
        peak_above as f64 / MIB as f64,
        after_above as f64 / MIB as f64
    );
    // A step holds at most 1 MiB of the file, its ~2,200 lines (1 MiB more),
    // their events and log records (a few hundred bytes each: ~2 MiB), beside
    // what the applied events leave in the book (`after`). Reading the whole
    // flood at once held more than the file's size in lines alone.
    assert!(
        peak_above < after_above + 8 * MIB,
        "peak {peak_above} bytes above the start, {after_above} after"
    );
    assert!(
        peak_above < file_bytes,
        "peak {peak_above} >= the file's {file_bytes} bytes"
    );
    drop(router);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_taps_share_the_write_budget_with_http_and_are_capped() {
    let _serial = SERIAL.lock().await;
    let running = start();
    // A budget of 64 KiB for every writer; the taps flood with 4 x 1.5 MB.
    let budget_bytes = 64 << 10;
    let config = HttpConfig {
        write_token: Some(TOKEN.into()),
        max_inflight_bytes: budget_bytes,
        ..HttpConfig::default()
    };
    let handle = running.applier.clone().with_write_budget(budget_bytes);
    let router = http::router(handle.clone(), running.metrics.clone(), config);
    assert_eq!(post(&router, TREE.to_string()).await.1["accepted"], 2);
    let limits = StreamLimits {
        max_connections: 4,
        ..StreamLimits::default()
    };
    let slots = StreamSlots::new(&limits);
    let usage = "{\"op\":\"usage\",\"t\":1700000000,\"account\":\"phys\",\"user\":\"alice\",\"amount\":1}\n";
    let per_tap_lines = 1_500_000 / usage.len();
    let mut taps = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (client, server) = tokio::io::duplex(64 << 10);
        admit_stream(server, &slots, handle.clone(), None, limits.clone());
        clients.push(client);
    }
    // A fifth connection is over the cap: an error line, then closed.
    let (fifth, server) = tokio::io::duplex(4096);
    admit_stream(server, &slots, handle.clone(), None, limits.clone());
    let mut refusal = String::new();
    BufReader::new(fifth).read_line(&mut refusal).await.unwrap();
    assert!(refusal.contains("too many tap connections"), "{refusal}");
    for client in clients {
        taps.push(tokio::spawn(async move {
            let (read, mut write) = tokio::io::split(client);
            let writer = tokio::spawn(async move {
                for _ in 0..per_tap_lines {
                    write.write_all(usage.as_bytes()).await.unwrap();
                }
                write.shutdown().await.unwrap();
            });
            let mut answers = BufReader::new(read).lines();
            let mut accepted = 0u64;
            while let Some(line) = answers.next_line().await.unwrap() {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                accepted += v["accepted"].as_u64().unwrap_or_else(|| panic!("{line}"));
            }
            writer.await.unwrap();
            accepted
        }));
    }
    // While the taps flood: HTTP writes go through, and the bytes held stay
    // within the budget.
    let mut most_held = 0;
    let mut http_accepted = 0;
    for _ in 0..20 {
        let (status, answer) = post(&router, usage.repeat(10)).await;
        assert_eq!(status, 200, "{answer}");
        http_accepted += answer["accepted"].as_u64().unwrap();
        most_held = most_held.max(handle.write_budget().held_bytes());
        assert!(most_held <= budget_bytes);
    }
    assert_eq!(http_accepted, 200);
    let mut tap_accepted = 0;
    for tap in taps {
        tap_accepted += tap.await.unwrap();
    }
    assert_eq!(tap_accepted, 4 * per_tap_lines as u64);
    running.wait_applied(2 + 200 + tap_accepted).await;
    eprintln!("socket flood: at most {most_held} of {budget_bytes} budget bytes seen held");
    drop((router, handle));
    running.stop().await;
}
