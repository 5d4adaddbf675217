//! The applier under failure (issue 16, items 3 and 5), on the batch engine
//! wrapped in a test-only engine (`Faulty`) that fails (an `EngineError`,
//! as the incremental engine returns when its workers are gone) on an account
//! named `poison`, and takes 1.5 s to apply an account named `slow`:
//! - the poison write: refused, nothing of it applied, the engine rebuilt
//!   from the durable state, and the service goes on. Before, the applier
//!   panicked after the event was synced, and every restart replayed it;
//! - a poison record in a log written before apply-then-log: quarantined with
//!   a message naming the segment file and the sequence, the service starts
//!   without it, and later starts skip it. Before: a panic at every start;
//! - a full disk (a 512 KiB tmpfs, where this machine lets the test mount
//!   one): a refused write is never applied, now or after a restart,
//!   `/healthz` is unhealthy while writes fail, writes work again once space
//!   returns (no restart), and sequence numbers never go backwards. Before:
//!   the refused write stayed applied in memory, every later write failed
//!   until a restart and the health said ok;
//! - a write answered 408 (it waited behind a slow one past its deadline) is
//!   never applied. Before: the timeout layer answered 408 and the queued
//!   write was applied anyway.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fairflow_book::Book;
use fairflow_engine::{BatchEngine, Engine, EngineError};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::report::{FairshareTable, JobPriority, SharedJobs};
use fairflow_model::{Config, Time};
use fairflow_serve::OutputFormat;
use fairflow_service::applier::{self, ApplierConfig, ApplierHandle, WriteError};
use fairflow_service::backend::Query;
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_store::EventLog;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The batch engine, except that an account named `poison` makes `apply`
/// fail and one named `slow` takes 1.5 s; with its flag set, `restore` fails.
struct Faulty(BatchEngine, Arc<AtomicBool>);

fn names(lines: &[LogLine]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.event.as_ref().ok())
        .map(|e| format!("{:?}", e.op))
        .collect()
}

impl Engine for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn book(&self) -> &Book {
        self.0.book()
    }
    fn applied(&self) -> u64 {
        self.0.applied()
    }
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, EngineError> {
        let ops = names(&lines);
        if ops.iter().any(|op| op.contains("\"slow\"")) {
            std::thread::sleep(Duration::from_millis(1500));
        }
        // Half the batch is applied before the failure, as a real failure
        // in the middle of a batch would leave it.
        if let Some(at) = ops.iter().position(|op| op.contains("\"poison\"")) {
            let before: Vec<LogLine> = lines.into_iter().take(at).collect();
            self.0.apply(before)?;
            return Err(EngineError::Dataflow(
                fairflow_dataflow::EngineError::WorkersGone,
            ));
        }
        self.0.apply(lines)
    }
    fn advance_to(&mut self, t: Time) -> Result<(), EngineError> {
        self.0.advance_to(t)
    }
    fn fairshare(&mut self) -> Result<FairshareTable, EngineError> {
        self.0.fairshare()
    }
    fn user_factors(&mut self) -> Result<BTreeMap<(String, String), f64>, EngineError> {
        self.0.user_factors()
    }
    fn priorities(&mut self) -> Result<Vec<JobPriority>, EngineError> {
        self.0.priorities()
    }
    fn top(&mut self, k: usize) -> Result<SharedJobs, EngineError> {
        self.0.top(k)
    }
    fn job(&mut self, id: &str) -> Result<Option<JobPriority>, EngineError> {
        self.0.job(id)
    }
    fn snapshot(&self) -> Result<Vec<u8>, EngineError> {
        self.0.snapshot()
    }
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), EngineError> {
        if self.1.load(Ordering::SeqCst) {
            return Err(EngineError::Dataflow(
                fairflow_dataflow::EngineError::WorkersGone,
            ));
        }
        self.0.restore(snapshot)
    }
}

fn backend() -> EngineBackend {
    backend_with(Arc::default())
}

fn backend_with(restore_fails: Arc<AtomicBool>) -> EngineBackend {
    EngineBackend::new(Box::new(Faulty(
        BatchEngine::new(Config::default()),
        restore_fails,
    )))
}

fn config(dir: &std::path::Path) -> ApplierConfig {
    ApplierConfig {
        data_dir: dir.to_path_buf(),
        checkpoint_every: 1_000,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    }
}

fn start(
    dir: &std::path::Path,
) -> (
    ApplierHandle,
    applier::RecoveryReport,
    std::thread::JoinHandle<()>,
) {
    applier::start(backend(), config(dir), Arc::new(Metrics::new())).unwrap()
}

async fn stop(handle: ApplierHandle, thread: std::thread::JoinHandle<()>) {
    drop(handle);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes())
        .map(|line| line.expect("in memory"))
        .collect()
}

fn account(name: &str, t: u64) -> String {
    format!("{{\"op\":\"account\",\"t\":{t},\"name\":\"{name}\"}}")
}

/// A log in `dir/log` holding one record per account of `names` (at times
/// 10, 11, ...), as a service that logged them would leave it; the records.
fn write_log(dir: &std::path::Path, names: &[&str]) -> Vec<Vec<u8>> {
    let (mut log, _) = EventLog::open(dir.join("log")).unwrap();
    let records: Vec<Vec<u8>> = names
        .iter()
        .zip(10..)
        .map(|(name, t)| account(name, t).into_bytes())
        .collect();
    log.append(&records).unwrap();
    records
}

/// The account names of a `sshare` JSON answer (root included).
fn accounts(sshare_json: &str) -> Vec<String> {
    let rows: serde_json::Value = serde_json::from_str(sshare_json).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["user"].is_null())
        .filter_map(|r| r["account"].as_str().map(str::to_string))
        .collect()
}

async fn account_names(handle: &ApplierHandle) -> Vec<String> {
    let sshare = handle
        .read(Query::Sshare {
            format: OutputFormat::Json,
            selection: Default::default(),
        })
        .await
        .unwrap();
    accounts(&sshare)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_write_is_refused_and_the_service_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = Arc::new(Metrics::new());
    let (handle, _, thread) =
        applier::start(backend(), config(dir.path()), metrics.clone()).unwrap();
    let good = handle.write(lines(&account("a", 10))).await.unwrap();
    assert_eq!((good.accepted, good.first_sequence), (1, 0));
    // The engine fails on the second event, after applying the first.
    let text = [account("b", 12), account("poison", 12), account("c", 12)].join("\n");
    match handle.write(lines(&text)).await {
        Err(WriteError::Engine(reason)) => {
            assert!(reason.contains("nothing of it was applied"), "{reason}")
        }
        other => panic!("the poison write must be refused: {other:?}"),
    }
    // The engine was rebuilt: nothing of the refused write shows, and the
    // service is healthy and takes writes.
    assert_eq!(handle.health().problem(), None);
    assert_eq!(account_names(&handle).await, ["root", "a"]);
    let next = handle.write(lines(&account("d", 13))).await.unwrap();
    // Nothing of the refused write was logged: the next record is number 1.
    assert_eq!((next.accepted, next.first_sequence), (1, 1));
    assert_eq!(account_names(&handle).await, ["root", "a", "d"]);
    // The operator sees it: one write refused, one rebuild.
    let text = metrics.render(None, 0);
    for line in [
        "fairflow_writes_refused_total 1",
        "fairflow_engine_rebuilds_total 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    stop(handle, thread).await;
    // A restart replays exactly the acknowledged events.
    let (handle, report, thread) = start(dir.path());
    assert_eq!(report.quarantined, 0);
    assert_eq!(account_names(&handle).await, ["root", "a", "d"]);
    stop(handle, thread).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_rebuild_fails_the_service_instead_of_serving_an_unknown_state() {
    let dir = tempfile::tempdir().unwrap();
    let restore_fails = Arc::new(AtomicBool::new(false));
    let (handle, _, thread) = applier::start(
        backend_with(restore_fails.clone()),
        config(dir.path()),
        Arc::new(Metrics::new()),
    )
    .unwrap();
    handle.write(lines(&account("a", 10))).await.unwrap();
    restore_fails.store(true, Ordering::SeqCst);
    let refused = handle.write(lines(&account("poison", 11))).await;
    assert!(matches!(refused, Err(WriteError::Engine(_))), "{refused:?}");
    // The rebuild failed: the service failed (`run` exits non-zero on it),
    // and nothing more is answered from the engine.
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
    let failure = handle.health().failure().expect("failed");
    assert!(failure.contains("could not be rebuilt"), "{failure}");
    assert!(handle.stopped());
    assert!(matches!(
        handle.write(lines(&account("b", 12))).await,
        Err(WriteError::Stopped)
    ));
    assert!(handle
        .read(Query::Sshare {
            format: OutputFormat::Json,
            selection: Default::default(),
        })
        .await
        .is_err());
    drop(handle);
    // A restart serves exactly the acknowledged write.
    let (handle, _, thread) = start(dir.path());
    assert_eq!(account_names(&handle).await, ["root", "a"]);
    stop(handle, thread).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_record_in_an_old_log_is_quarantined_not_replayed_forever() {
    let dir = tempfile::tempdir().unwrap();
    // A log as a service that logged before applying could leave it.
    write_log(dir.path(), &["a", "poison", "c"]);
    let segment = dir.path().join("log/events-00000000000000000000.wal");
    assert!(segment.exists());

    let (handle, report, thread) = start(dir.path());
    assert_eq!(report.newly_quarantined.len(), 1, "{report:?}");
    let message = &report.newly_quarantined[0];
    assert!(message.contains("QUARANTINED: log record 1 "), "{message}");
    assert!(
        message.contains(&segment.display().to_string()),
        "{message}"
    );
    let kept = std::fs::read_to_string(dir.path().join("quarantine/record-1.jsonl")).unwrap();
    assert!(
        kept.starts_with(&format!("{}\n# ", account("poison", 11))),
        "{kept}"
    );
    // Two records replayed, the quarantined one skipped.
    assert_eq!((report.replayed, report.quarantined), (2, 1));
    assert_eq!(handle.health().problem(), None);
    assert_eq!(account_names(&handle).await, ["root", "a", "c"]);
    // Writes go on after the log's last record.
    let next = handle.write(lines(&account("d", 13))).await.unwrap();
    assert_eq!(next.first_sequence, 3);
    stop(handle, thread).await;

    // Later starts skip it, saying so, and quarantine nothing new.
    let (handle, report, thread) = start(dir.path());
    assert!(report.newly_quarantined.is_empty(), "{report:?}");
    assert_eq!(account_names(&handle).await, ["root", "a", "c", "d"]);
    stop(handle, thread).await;
}

/// A write of `n` accounts named `{prefix}-{i}`, padded to about 256 bytes each.
fn many_accounts(prefix: &str, n: usize, t: u64) -> Vec<LogLine> {
    let pad = "x".repeat(200);
    let text: Vec<String> = (0..n)
        .map(|i| account(&format!("{prefix}-{i}-{pad}"), t))
        .collect();
    lines(&text.join("\n"))
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_cleanly_and_recovers_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
        .arg(&mount)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        fairflow_testkit::prerequisite_missing(
            "a 512 KiB tmpfs (`mount -t tmpfs` needs root): the full-disk test did not run",
        );
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.clone());
    // A filler file, deleted later to give space back.
    std::fs::write(mount.join("filler"), vec![1u8; 128 << 10]).unwrap();
    let data = mount.join("data");
    let (handle, _, thread) = start(&data);
    let mut acknowledged = 0;
    let mut last_sequence = 0;
    let mut refused = None;
    for round in 0..400 {
        match handle
            .write(many_accounts(&format!("w{round}"), 40, 10))
            .await
        {
            Ok(outcome) => {
                assert_eq!(outcome.accepted, 40);
                acknowledged += 40;
                last_sequence = outcome.first_sequence + 39;
            }
            Err(reason) => {
                refused = Some((round, reason));
                break;
            }
        }
    }
    let (round, reason) = refused.expect("the 512 KiB disk fills up");
    assert!(
        matches!(&reason, WriteError::Unavailable(r) if r.contains("nothing of this write was applied")),
        "{reason:?}"
    );
    let problem = handle
        .health()
        .problem()
        .expect("unhealthy while the disk is full");
    assert!(problem.contains("durable log"), "{problem}");
    assert!(handle.health().failure().is_none(), "degraded, not failed");
    // The refused write is not visible: the engine was rolled back.
    let names = account_names(&handle).await;
    assert_eq!(
        names.len(),
        acknowledged + 1,
        "root and the acknowledged accounts"
    );
    assert!(!names.iter().any(|n| n.starts_with(&format!("w{round}-"))));
    // Still full: refused again, still unhealthy.
    assert!(handle.write(many_accounts("again", 40, 10)).await.is_err());
    assert!(handle.health().problem().is_some());
    // Space returns: the next write works and the health clears, no restart.
    std::fs::remove_file(mount.join("filler")).unwrap();
    let outcome = handle.write(many_accounts("after", 10, 11)).await.unwrap();
    assert_eq!(outcome.accepted, 10);
    assert!(
        outcome.first_sequence > last_sequence,
        "sequences never go backwards"
    );
    assert_eq!(handle.health().problem(), None);
    stop(handle, thread).await;
    // After a restart: exactly the acknowledged writes, never the refused ones.
    let (handle, _, thread) = start(&data);
    let names = account_names(&handle).await;
    assert_eq!(names.len(), acknowledged + 10 + 1);
    assert!(!names.iter().any(|n| n.starts_with(&format!("w{round}-"))));
    assert!(!names.iter().any(|n| n.starts_with("again-")));
    stop(handle, thread).await;
    // No checkpoint temporary file is left behind.
    let leftovers: Vec<_> = walk(&data)
        .into_iter()
        .filter(|p| p.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

const TOKEN: &str = "failures-token";

/// Post `body` with the token over a raw HTTP/1.1 connection; the status.
async fn post(address: std::net::SocketAddr, body: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let raw = format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    String::from_utf8_lossy(&response)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_answered_408_is_never_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, _, thread) = start(dir.path());
    let config = HttpConfig {
        write_token: Some(TOKEN.to_string()),
        request_timeout: Duration::from_millis(500),
        ..HttpConfig::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = http::router(handle.clone(), Arc::new(Metrics::new()), config.clone());
    let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let stopped = async {
            let _ = stopped.await;
        };
        http::serve(listener, router, &config, stopped, Duration::from_secs(2)).await;
    });
    // The slow write holds the applier for 1.5 s; the late one waits behind
    // it past its 0.5 s deadline.
    let slow_body = account("slow", 10);
    let slow = tokio::spawn(async move { post(address, &slow_body).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let late = post(address, &account("late", 11)).await;
    assert_eq!(late, 408);
    // The slow write was taken before its deadline: it is answered once durable.
    assert_eq!(slow.await.unwrap(), 200);
    assert_eq!(account_names(&handle).await, ["root", "slow"]);
    let _ = stop_server.send(());
    server.await.unwrap();
    stop(handle, thread).await;
    let (handle, _, thread) = start(dir.path());
    assert_eq!(account_names(&handle).await, ["root", "slow"]);
    stop(handle, thread).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_log_stops_the_start_unless_recover_keeps_what_is_intact() {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), &["a", "b", "c"]);
    // Flip a byte in the second record's payload: damage, not a torn tail.
    let segment = dir.path().join("log/events-00000000000000000000.wal");
    let mut bytes = std::fs::read(&segment).unwrap();
    let second = 8 + records[0].len();
    bytes[second + 8 + 3] ^= 0x20;
    std::fs::write(&segment, &bytes).unwrap();
    let error = applier::start(backend(), config(dir.path()), Arc::new(Metrics::new()))
        .err()
        .expect("a damaged log stops the start")
        .to_string();
    assert!(error.contains(&segment.display().to_string()), "{error}");
    assert!(error.contains(&format!("offset {second}")), "{error}");
    assert!(error.contains("--recover"), "{error}");
    // --recover keeps the record before the damage and says what it dropped.
    let recover = ApplierConfig {
        recover: true,
        ..config(dir.path())
    };
    let (handle, report, thread) =
        applier::start(backend(), recover, Arc::new(Metrics::new())).unwrap();
    let dropped = report.dropped.expect("what was dropped");
    assert!(
        dropped.contains(&format!("byte offset {second}")),
        "{dropped}"
    );
    assert!(dropped.contains("before record 1"), "{dropped}");
    assert_eq!(account_names(&handle).await, ["root", "a"]);
    // The log goes on from the kept records.
    let next = handle.write(lines(&account("d", 13))).await.unwrap();
    assert_eq!(next.first_sequence, 1);
    stop(handle, thread).await;
}

/// GET `/healthz` through `router`: the status and the body.
async fn healthz(router: &axum::Router) -> (u16, String) {
    use tower::ServiceExt;
    let request = axum::http::Request::get("/healthz")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).to_string())
}

/// A hung applier: `slow` holds the engine for 1.5 s, past a 0.3 s stall
/// deadline, so `/healthz` turns 503 while it is stuck and ok once it moved
/// on. Before, `/healthz` said ok however long an engine call took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_applier_turns_healthz_unhealthy_until_it_moves_again() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, _, thread) = start(dir.path());
    let config = HttpConfig {
        stall_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let router = http::router(handle.clone(), Arc::new(Metrics::new()), config);
    assert_eq!(healthz(&router).await.0, 200);
    let writer = {
        let handle = handle.clone();
        tokio::spawn(async move { handle.write(lines(&account("slow", 10))).await })
    };
    let mut unhealthy = None;
    for _ in 0..100 {
        let (status, body) = healthz(&router).await;
        if status == 503 {
            unhealthy = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let body = unhealthy.expect("/healthz said ok while the applier was stuck for 1.5 s");
    assert!(body.contains("no progress"), "{body}");
    assert_eq!(writer.await.unwrap().unwrap().accepted, 1);
    assert_eq!(healthz(&router).await, (200, "ok\n".to_string()));
    drop(router);
    stop(handle, thread).await;
}
