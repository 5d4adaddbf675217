//! The service's machinery end to end on loopback, with a small backend that
//! checks events against a book and remembers the applied ones: tokens, limits, malformed
//! input, half-written requests, restart recovery and the socket tap.

use std::sync::Arc;
use std::time::Duration;

use fairflow_book::Book;
use fairflow_ingest::write::event_to_line;
use fairflow_ingest::{LogLine, Rejection};
use fairflow_service::applier::{self, ApplierConfig, ApplierHandle};
use fairflow_service::backend::{Backend, BackendError, Gauges, Query, QueryError};
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use fairflow_service::taps::{serve_stream, StreamLimits};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod support;

#[derive(Default)]
struct RecordingBackend {
    book: Book,
    applied: Vec<String>,
}

impl Backend for RecordingBackend {
    fn apply(&mut self, lines: Vec<LogLine>) -> Result<Vec<Rejection>, BackendError> {
        let mut rejected = Vec::new();
        for line in lines {
            let Ok(event) = line.event else { continue };
            match self.book.apply(line.line, &event) {
                Ok(()) => self.applied.push(event_to_line(&event)),
                Err(r) => rejected.push(r),
            }
        }
        Ok(rejected)
    }
    fn query(&mut self, query: &Query) -> Result<String, QueryError> {
        match query {
            Query::Explain { job, .. } => Err(QueryError::NotFound(format!("unknown job `{job}`"))),
            _ => Ok(json!({ "applied": self.applied }).to_string()),
        }
    }
    fn snapshot(&mut self) -> Result<Vec<u8>, BackendError> {
        serde_json::to_vec(&self.applied).map_err(|e| BackendError::Other(e.to_string()))
    }
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), BackendError> {
        let lines: Vec<String> =
            serde_json::from_slice(snapshot).map_err(|e| BackendError::Other(e.to_string()))?;
        *self = RecordingBackend::default();
        let parsed = lines
            .iter()
            .enumerate()
            .map(|(i, l)| LogLine {
                line: i as u64,
                event: fairflow_ingest::parse_event(i as u64, l),
            })
            .collect();
        let rejected = self.apply(parsed)?;
        if rejected.is_empty() {
            Ok(())
        } else {
            Err(BackendError::Other(format!("{rejected:?}")))
        }
    }
    fn gauges(&mut self) -> Gauges {
        Gauges {
            now: self.book.last_event_at().unwrap_or(0),
            ..Gauges::default()
        }
    }
}

const TOKEN: &str = "s3cret-token";

struct Running {
    address: String,
    applier: ApplierHandle,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
    thread: std::thread::JoinHandle<()>,
}

async fn start(dir: &std::path::Path, config: HttpConfig) -> Running {
    let metrics = Arc::new(Metrics::new());
    let applier_config = ApplierConfig {
        data_dir: dir.to_path_buf(),
        checkpoint_every: 4,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    };
    let (handle, _report, thread) =
        applier::start(RecordingBackend::default(), applier_config, metrics.clone()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let router = http::router(handle.clone(), metrics, config.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        http::serve(
            listener,
            router,
            &config,
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(2),
        )
        .await;
    });
    Running {
        address,
        applier: handle,
        stop,
        server,
        thread,
    }
}

impl Running {
    async fn shutdown(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap();
        drop(self.applier);
        tokio::task::spawn_blocking(move || self.thread.join().unwrap())
            .await
            .unwrap();
    }
}

/// A raw HTTP/1.1 exchange; returns (status, body).
async fn request(address: &str, raw: &[u8]) -> (u16, String) {
    support::http_exchange(address, raw).await
}

fn post(body: &[u8], token: Option<&str>) -> Vec<u8> {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let mut raw = format!("POST /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    raw.extend_from_slice(body);
    raw
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").into_bytes()
}

fn config() -> HttpConfig {
    HttpConfig {
        write_token: Some(TOKEN.into()),
        max_body_bytes: 4096,
        max_line_bytes: 512,
        header_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_secs(2),
        ..HttpConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_the_token_and_bad_input_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path(), config()).await;
    let a = &service.address;
    let body = b"{\"op\":\"account\",\"t\":10,\"name\":\"a\"}\n";
    assert_eq!(request(a, &post(body, None)).await.0, 401);
    assert_eq!(request(a, &post(body, Some("wrong-token!"))).await.0, 401);
    let (status, answer) = request(a, &post(body, Some(TOKEN))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap()["accepted"],
        1
    );
    // Malformed JSON, an unknown op, invalid UTF-8, an overlong line, an impossible event.
    let mut bad = b"{oops\n{\"op\":\"zap\",\"t\":11}\n\xff\xfe\n".to_vec();
    bad.extend(
        format!(
            "{{\"op\":\"tick\",\"t\":12,\"pad\":\"{}\"}}\n",
            "x".repeat(600)
        )
        .into_bytes(),
    );
    bad.extend(b"{\"op\":\"user\",\"t\":12,\"user\":\"u\",\"account\":\"ghost\"}\n{\"op\":\"user\",\"t\":12,\"user\":\"u\",\"account\":\"a\"}\n");
    let (status, answer) = request(a, &post(&bad, Some(TOKEN))).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["accepted"], 1);
    let rejected: Vec<(u64, String)> = answer["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert!(rejected[0].1.starts_with("not valid JSON"));
    assert_eq!(rejected[1].1, "unknown op `zap`");
    assert_eq!(rejected[2].1, "not valid UTF-8");
    assert_eq!(rejected[3].1, "line is longer than 512 bytes");
    assert_eq!(rejected[4].1, "unknown account `ghost`");
    // A body over the limit is refused whole.
    let huge = vec![b'\n'; 5000];
    assert_eq!(request(a, &post(&huge, Some(TOKEN))).await.0, 413);
    // A half-written request (headers never finished) is cut off, and the service still answers.
    let started = std::time::Instant::now();
    let (status, _) = request(a, b"POST /v1/events HTTP/1.1\r\nHost: x\r\n").await;
    assert!(status == 0 || status == 408, "{status}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // A body promised but not sent times out too.
    let (status, _) = request(a, b"POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token\r\nContent-Length: 100\r\n\r\n{").await;
    assert!(status == 0 || status == 408, "{status}");
    let (status, body) = request(a, &get("/v1/sshare")).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["applied"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(request(a, &get("/v1/jobs/7/explain")).await.0, 404);
    let (status, metrics) = request(a, &get("/metrics")).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("fairflow_events_applied_total 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fairflow_events_rejected_total 5"),
        "{metrics}"
    );
    assert_eq!(request(a, &get("/healthz")).await.0, 200);
    service.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_recovers_exactly_the_acknowledged_events() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path(), config()).await;
    for i in 0..10 {
        let body = format!("{{\"op\":\"account\",\"t\":{i},\"name\":\"a{i}\"}}\n");
        assert_eq!(
            request(&service.address, &post(body.as_bytes(), Some(TOKEN)))
                .await
                .0,
            200
        );
    }
    // Crash-like stop: the applier thread is abandoned without its final checkpoint.
    let _ = service.stop.send(());
    service.server.await.unwrap();
    std::mem::forget(service.applier);
    // Corrupt nothing; reopen while the old applier still holds its handle open.
    let service = start(dir.path(), config()).await;
    let (_, body) = request(&service.address, &get("/v1/sshare")).await;
    let applied = serde_json::from_str::<Value>(&body).unwrap()["applied"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(applied, 10);
    // A duplicate of an acknowledged creation is an update, not a second account.
    service.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_tap_logs_in_and_answers_each_batch() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path(), config()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let applier = service.applier.clone();
    tokio::spawn(async move {
        for _ in 0..2 {
            let (stream, _) = listener.accept().await.unwrap();
            let applier = applier.clone();
            tokio::spawn(serve_stream(
                stream,
                applier,
                Some(TOKEN.into()),
                StreamLimits {
                    max_line_bytes: 256,
                    ..StreamLimits::default()
                },
            ));
        }
    });
    // Wrong token: refused.
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"{\"token\":\"nope\"}\n{\"op\":\"account\",\"t\":1,\"name\":\"x\"}\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.contains("error"), "{answer}");
    // Right token: one answer line per batch.
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(format!("{{\"token\":\"{TOKEN}\"}}\n{{\"op\":\"account\",\"t\":1,\"name\":\"x\"}}\n{{\"op\":\"user\",\"t\":1,\"user\":\"u\",\"account\":\"nope\"}}\n").as_bytes()).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let totals = answer
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .fold((0, 0), |(a, r), v| {
            (
                a + v["accepted"].as_u64().unwrap(),
                r + v["rejected"].as_array().unwrap().len(),
            )
        });
    assert_eq!(totals, (1, 1), "{answer}");
    service.shutdown().await;
}

fn post_keyed(body: &[u8], scheme: &str, key: &str) -> Vec<u8> {
    let mut raw = format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: {scheme} {TOKEN}\r\nIdempotency-Key: {key}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

async fn applied_count(address: &str) -> usize {
    let (_, body) = request(address, &get("/v1/sshare")).await;
    serde_json::from_str::<Value>(&body).unwrap()["applied"]
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_applies_a_retried_write_once_even_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path(), config()).await;
    let body = b"{\"op\":\"account\",\"t\":10,\"name\":\"a\"}\n";
    // The scheme is case-insensitive (RFC 7235).
    let (status, answer) = request(&service.address, &post_keyed(body, "bearer", "k-1")).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (answer["accepted"].as_u64(), answer.get("duplicate")),
        (Some(1), None)
    );
    let (status, answer) = request(&service.address, &post_keyed(body, "BEARER", "k-1")).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["duplicate"], true);
    assert_eq!(answer["accepted"], 1, "the first write's counts");
    assert_eq!(applied_count(&service.address).await, 1);
    // A malformed key is refused whole.
    let (status, _) = request(&service.address, &post_keyed(body, "Bearer", "two words")).await;
    assert_eq!(status, 400);
    service.shutdown().await;
    let service = start(dir.path(), config()).await;
    let (status, answer) = request(&service.address, &post_keyed(body, "Bearer", "k-1")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap()["duplicate"],
        true
    );
    assert_eq!(applied_count(&service.address).await, 1);
    // A new key is a new write.
    let (status, _) = request(&service.address, &post_keyed(body, "Bearer", "k-2")).await;
    assert_eq!(status, 200);
    assert_eq!(applied_count(&service.address).await, 2);
    service.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_under_a_half_open_connection_flood() {
    let dir = tempfile::tempdir().unwrap();
    let config = HttpConfig {
        max_connections: 64,
        max_connections_per_client: 16,
        header_timeout: Duration::from_secs(10),
        ..config()
    };
    let service = start(dir.path(), config).await;
    // 200 connections from 127.0.0.1 that never send a byte: before, they
    // held every connection slot for the 10 s header timeout.
    let mut flood = Vec::new();
    for _ in 0..200 {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(&service.address)).await
        {
            flood.push(stream);
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Another client (127.0.0.2 is loopback too on Linux).
    let port = service.address.rsplit(':').next().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let started = std::time::Instant::now();
    let mut stream = socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    stream.write_all(&get("/healthz")).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await;
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&response);
    println!(
        "healthz under a flood of {} half-open connections: {:.1} ms",
        flood.len(),
        elapsed.as_secs_f64() * 1000.0
    );
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{text:?} after {elapsed:?}"
    );
    drop(flood);
    service.shutdown().await;
}
