//! One set of bounds for every way in, through the running service on
//! loopback: a followed `jobcomp` record at the bound of a usage amount (2^50
//! TRES-seconds) is charged live and recovered the same after a restart; one
//! beyond it (the attack's `billing=1e12`, and `billing=1e300`, which once
//! overflowed the engine's sums and panicked a read) is rejected live, so
//! live state equals recovered state; and an event built out of bounds by
//! any converter is refused by the applier before it is logged.

use std::sync::Arc;
use std::time::Duration;

use fairflow_engine::IncrementalEngine;
use fairflow_ingest::LogLine;
use fairflow_model::event::Op;
use fairflow_model::{Config, Event};
use fairflow_service::applier::{self, ApplierConfig, ApplierHandle};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_service::taps::follow_jobcomp_in;
use serde_json::Value;
use tokio::net::TcpListener;

mod support;

const TOKEN: &str = "bounds-token";

const TREE: &str = "{\"op\":\"account\",\"t\":1699990000,\"name\":\"phys\",\"shares\":1}\n\
{\"op\":\"user\",\"t\":1699990000,\"user\":\"alice\",\"account\":\"phys\",\"shares\":1}\n";

/// alice's job from 22:13:20Z (1_700_000_000), `BILLING` billable TRES
/// until `END`.
const RECORD: &str = "JobId=7 UserId=alice(1001) GroupId=users(100) Name=x Tres=billing=0 \
    JobState=COMPLETED Partition=batch TimeLimit=60 StartTime=2023-11-14T22:13:20 EndTime=END \
    NodeList=n01 NodeCnt=1 ProcCnt=2 WorkDir=/home/alice ReservationName= \
    Tres=cpu=2,node=1,billing=BILLING Account=phys QOS=normal WcKey= Cluster=c \
    SubmitTime=2023-11-14T21:00:00 EligibleTime=2023-11-14T21:00:00 DerivedExitCode=0:0 \
    ExitCode=0:0";

struct Service {
    address: String,
    applier: ApplierHandle,
    metrics: Arc<Metrics>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
    thread: std::thread::JoinHandle<()>,
}

async fn start(dir: &std::path::Path) -> Service {
    let metrics = Arc::new(Metrics::new());
    let config = ApplierConfig {
        data_dir: dir.to_path_buf(),
        checkpoint_every: 1_000,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    };
    let backend = EngineBackend::new(Box::new(
        IncrementalEngine::start(1, Config::default()).unwrap(),
    ));
    let (applier, _report, thread) = applier::start(backend, config, metrics.clone()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let http_config = HttpConfig {
        write_token: Some(TOKEN.into()),
        ..HttpConfig::default()
    };
    let router = http::router(applier.clone(), metrics.clone(), http_config.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        http::serve(
            listener,
            router,
            &http_config,
            shutdown,
            Duration::from_secs(2),
        )
        .await;
    });
    Service {
        address,
        applier,
        metrics,
        stop,
        server,
        thread,
    }
}

impl Service {
    async fn shutdown(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap();
        drop(self.applier);
        tokio::task::spawn_blocking(move || self.thread.join().unwrap())
            .await
            .unwrap();
    }

    /// An HTTP/1.1 exchange on loopback: (status, body).
    async fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Authorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        support::http_exchange(&self.address, raw.as_bytes()).await
    }

    /// alice's raw usage, as `GET /v1/sshare` gives it.
    async fn alice_raw_usage(&self) -> Value {
        let (status, body) = self.request("GET", "/v1/sshare", "").await;
        assert_eq!(status, 200, "{body}");
        let rows: Vec<Value> = serde_json::from_str(&body).unwrap();
        rows.into_iter()
            .find(|r| r["user"] == "alice")
            .unwrap_or_else(|| panic!("{body}"))["raw_usage"]
            .clone()
    }

    fn counts(&self) -> (u64, u64) {
        let text = self.metrics.render(None, 0);
        let counter = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or(0)
        };
        (
            counter("fairflow_events_applied_total"),
            counter("fairflow_events_rejected_total"),
        )
    }
}

fn record(billing: &str, end: &str) -> String {
    RECORD.replace("BILLING", billing).replace("END", end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_record_at_the_bound_survives_a_restart_and_one_beyond_is_rejected_live() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path()).await;
    let (status, body) = service.request("POST", "/v1/events", TREE).await;
    assert_eq!(
        (status, body.contains("\"accepted\":2")),
        (200, true),
        "{body}"
    );
    // 2^40 billable TRES for 1,024 s (22:13:20 to 22:30:24) is 2^50
    // TRES-seconds: the largest usage amount. Then the attack's billing=1e12
    // for an hour (3.6e15), and billing=1e300.
    let jobcomp = dir.path().join("jobcomp.log");
    let lines = [
        record("1099511627776", "2023-11-14T22:30:24"),
        record("1000000000000", "2023-11-14T23:13:20"),
        record("1e300", "2023-11-14T23:13:20"),
    ];
    std::fs::write(&jobcomp, lines.join("\n") + "\n").unwrap();
    let follower = tokio::spawn(follow_jobcomp_in(
        jobcomp,
        service.applier.clone(),
        Duration::from_millis(20),
        chrono::Utc,
    ));
    for _ in 0..1_000 {
        if service.counts() == (3, 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    follower.abort();
    assert_eq!(service.counts(), (3, 2));
    let live = service.alice_raw_usage().await;
    assert_eq!(live, Value::from(1u64 << 50));

    // An event out of bounds that a converter might build is refused by the
    // applier, naming its field, and never logged.
    let outcome = service
        .applier
        .write(vec![LogLine {
            line: 1,
            event: Ok(Event {
                t: 1_700_001_024,
                op: Op::Usage {
                    account: "phys".into(),
                    user: Some("alice".into()),
                    amount: 1e300,
                    period: None,
                },
            }),
        }])
        .await
        .unwrap();
    assert_eq!(outcome.accepted, 0);
    assert_eq!(outcome.rejected[0].field.as_deref(), Some("amount"));
    assert!(
        outcome.rejected[0].reason.contains("out of range"),
        "{outcome:?}"
    );
    assert_eq!(service.alice_raw_usage().await, live);
    service.shutdown().await;

    // Recovered from the log: the same usage.
    let service = start(dir.path()).await;
    assert_eq!(service.alice_raw_usage().await, live);
    service.shutdown().await;
}
