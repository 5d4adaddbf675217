//! `/metrics` as a Prometheus server reads it: scraped through the router and
//! parsed as OpenMetrics text. The content type says OpenMetrics, every
//! sample belongs to a family declared by `# TYPE`, counters' samples end in
//! `_total`, the text ends with `# EOF`, and the standard `process_*`
//! metrics, `fairflow_build_info` and the ingest lag are there.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request};
use fairflow_engine::BatchEngine;
use fairflow_model::Config;
use fairflow_service::applier::{self, ApplierConfig};
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_service::metrics::Metrics;
use tower::ServiceExt;

/// The families (`# TYPE name type`) and samples (`name{labels} value`) of
/// an OpenMetrics text; panics on a line that is neither.
fn parse(text: &str) -> (BTreeMap<String, String>, Vec<(String, f64)>) {
    let mut families = BTreeMap::new();
    let mut samples = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "{text}");
    for line in &lines[..lines.len() - 1] {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            families.insert(name.to_string(), kind.to_string());
        } else if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
        } else {
            let (name_labels, value) = line.rsplit_once(' ').unwrap();
            let name = name_labels.split('{').next().unwrap().to_string();
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("bad value in `{line}`"));
            samples.push((name, value));
        }
    }
    (families, samples)
}

/// The family a sample belongs to, by the OpenMetrics suffixes of its type.
fn family_of<'a>(
    families: &'a BTreeMap<String, String>,
    sample: &str,
) -> Option<(&'a str, &'a str)> {
    families.iter().find_map(|(name, kind)| {
        let suffixes: &[&str] = match kind.as_str() {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_sum", "_count", "_created"],
            "info" => &["_info"],
            _ => &[""],
        };
        suffixes
            .iter()
            .any(|s| sample == format!("{name}{s}"))
            .then_some((name.as_str(), kind.as_str()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_openmetrics_with_process_build_and_lag() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = Arc::new(Metrics::new());
    let config = ApplierConfig {
        data_dir: dir.path().to_path_buf(),
        checkpoint_every: 1_000,
        queue_capacity: 8,
        max_group: 16,
        recover: false,
    };
    let (handle, _report, thread) = applier::start(
        EngineBackend::new(Box::new(BatchEngine::new(Config::default()))),
        config,
        metrics.clone(),
    )
    .unwrap();
    // One event at 2023-11-14T22:13:20Z, so the lag is now minus that.
    let lines = applier::parse_body(
        b"{\"op\":\"account\",\"t\":1700000000,\"name\":\"a\"}\nnot json\n",
        1 << 16,
    );
    handle.write(lines).await.unwrap();
    let router = http::router(handle.clone(), metrics, HttpConfig::default());
    let response = router
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{content_type}"
    );
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let text = String::from_utf8(body.to_vec()).unwrap();
    let (families, samples) = parse(&text);
    for (name, _) in &samples {
        let (_, kind) =
            family_of(&families, name).unwrap_or_else(|| panic!("`{name}` has no # TYPE\n{text}"));
        if kind == "counter" {
            assert!(
                name.ends_with("_total") || name.ends_with("_created"),
                "{name}"
            );
        }
    }
    let value = |name: &str| {
        samples
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no `{name}` in\n{text}"))
            .1
    };
    assert_eq!(families["fairflow_events_applied"], "counter");
    assert_eq!(value("fairflow_events_applied_total"), 1.0);
    assert_eq!(value("fairflow_events_rejected_total"), 1.0);
    assert_eq!(families["fairflow_build"], "info");
    assert_eq!(value("fairflow_build_info"), 1.0);
    assert!(
        text.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert_eq!(families["process_cpu_seconds"], "counter");
    assert!(value("process_cpu_seconds_total") >= 0.0);
    assert!(value("process_resident_memory_bytes") > 0.0);
    assert!(value("process_open_fds") > 0.0);
    assert!(value("process_start_time_seconds") > 1_700_000_000.0);
    assert_eq!(value("fairflow_event_time_seconds"), 1_700_000_000.0);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as f64;
    let lag = value("fairflow_ingest_lag_seconds");
    assert!((lag - (wall - 1_700_000_000.0)).abs() <= 5.0, "{lag}");
    assert_eq!(value("fairflow_batch_events_count"), 1.0);
    assert_eq!(value("fairflow_update_latency_seconds_count"), 1.0);
    drop(handle);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
}
