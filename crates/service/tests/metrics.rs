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
    // One event at 2023-11-14T22:13:20Z, so the lag is now minus that.
    let events = "{\"op\":\"account\",\"t\":1700000000,\"name\":\"a\"}\nnot json\n";
    let (status, content_type, text) = exchange(events, "/metrics", None).await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{content_type}"
    );
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
}

/// `/metrics` of an applier fed `events`, with `limit` associations.
async fn scrape(events: &str, limit: Option<usize>) -> String {
    answer(events, "/metrics", limit).await
}

/// The body of `GET path` from an applier fed `events`, with `limit`
/// associations in `/metrics`.
async fn answer(events: &str, path: &str, limit: Option<usize>) -> String {
    exchange(events, path, limit).await.2
}

/// `(status, content type, body)` of `GET path` from an applier (on the
/// batch engine) fed `events`, with `limit` associations in `/metrics`.
async fn exchange(events: &str, path: &str, limit: Option<usize>) -> (u16, String, String) {
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
    handle
        .write(applier::parse_body(events.as_bytes(), 1 << 16))
        .await
        .unwrap();
    let http_config = HttpConfig {
        metrics_associations: limit,
        ..HttpConfig::default()
    };
    let router = http::router(handle.clone(), metrics, http_config);
    let response = router
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_string();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    drop(handle);
    tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_association_gauges_are_opt_in_bounded_and_finite() {
    // Fair Tree without decay, by hand: account a (the only one) with users
    // u1, u2, u3 of 1 share each and usage 300, 100, 0. Within a, each user's
    // norm shares are 1/3 and its usage is its part of a's 400: LevelFS
    // u1 (1/3)/0.75 = 4/9, u2 (1/3)/0.25 = 4/3, u3 infinite (no usage). Ranked
    // by LevelFS, highest first: u3, u2, u1, so FairShare = rank / 3: u3 1,
    // u2 2/3, u1 1/3. RawUsage: root and a 400, u1 300, u2 100, u3 0.
    let events = r#"{"op":"config","t":1700000000,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":1700000000,"name":"a","shares":1}
{"op":"user","t":1700000000,"user":"u1","account":"a","shares":1}
{"op":"user","t":1700000000,"user":"u2","account":"a","shares":1}
{"op":"user","t":1700000000,"user":"u3","account":"a","shares":1}
{"op":"usage","t":1700000000,"account":"a","user":"u1","amount":300}
{"op":"usage","t":1700000000,"account":"a","user":"u2","amount":100}
"#;
    // Off by default.
    let text = scrape(events, None).await;
    assert!(!text.contains("fairflow_association_"), "{text}");
    // The 4 rows with the most usage: a and root (400, a first by name), u1, u2.
    let text = scrape(events, Some(4)).await;
    let (families, _) = parse(&text);
    assert_eq!(families["fairflow_association_fairshare"], "gauge");
    let sample = |name: &str, account: &str, user: &str| -> Option<f64> {
        let prefix = format!("{name}{{account=\"{account}\",user=\"{user}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.parse().unwrap())
    };
    let raw = "fairflow_association_raw_usage";
    assert_eq!(sample(raw, "root", ""), Some(400.0), "{text}");
    assert_eq!(sample(raw, "a", ""), Some(400.0));
    assert_eq!(sample(raw, "a", "u1"), Some(300.0));
    assert_eq!(sample(raw, "a", "u2"), Some(100.0));
    assert_eq!(sample(raw, "a", "u3"), None, "not among the 4");
    let close = |got: Option<f64>, want: f64| {
        let got = got.unwrap_or_else(|| panic!("no sample for {want} in\n{text}"));
        assert!((got - want).abs() < 1e-12, "{got} != {want}");
    };
    let fairshare = "fairflow_association_fairshare";
    close(sample(fairshare, "a", "u1"), 1.0 / 3.0);
    close(sample(fairshare, "a", "u2"), 2.0 / 3.0);
    let level_fs = "fairflow_association_level_fs";
    close(sample(level_fs, "a", "u1"), 4.0 / 9.0);
    close(sample(level_fs, "a", "u2"), 4.0 / 3.0);
    // All: u3's infinite LevelFS is the largest finite f64, as
    // prometheus-slurm-exporter maps slurmrestd's Infinity.
    let text = scrape(events, Some(usize::MAX)).await;
    assert!(
        text.lines().any(|l| l
            == "fairflow_association_level_fs{account=\"a\",user=\"u3\"} 1.7976931348623157e308"),
        "{text}"
    );
    assert!(
        text.contains("fairflow_association_fairshare{account=\"a\",user=\"u3\"} 1.0"),
        "{text}"
    );
    parse(&text);
}

/// `fairness_error` by hand: root -> a (3 shares), b (1 share), c (0 usage,
/// 4 shares); usage a 300, b 100 (no decay): among root's children a's
/// share is 3/8 and its usage 3/4 (+0.375), b 1/8 and 1/4 (+0.125), c 1/2
/// and 0 (−0.5). The 2 accounts with the largest error in absolute value:
/// c and a; none without `--metrics-associations`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fairness_error_gauges_are_opt_in_and_bounded() {
    let events = r#"{"op":"config","t":1700000000,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":1700000000,"name":"a","shares":3}
{"op":"account","t":1700000000,"name":"b","shares":1}
{"op":"account","t":1700000000,"name":"c","shares":4}
{"op":"user","t":1700000000,"user":"u1","account":"a","shares":1}
{"op":"user","t":1700000000,"user":"u2","account":"b","shares":1}
{"op":"user","t":1700000000,"user":"u3","account":"c","shares":1}
{"op":"usage","t":1700000000,"account":"a","user":"u1","amount":300}
{"op":"usage","t":1700000000,"account":"b","user":"u2","amount":100}
"#;
    let text = scrape(events, None).await;
    assert!(!text.contains("fairflow_fairness_error{"), "{text}");
    let text = scrape(events, Some(2)).await;
    let (families, _) = parse(&text);
    assert_eq!(families["fairflow_fairness_error"], "gauge");
    let sample = |account: &str| -> Option<f64> {
        let prefix = format!("fairflow_fairness_error{{account=\"{account}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.parse().unwrap())
    };
    assert_eq!(sample("c"), Some(-0.5), "{text}");
    assert_eq!(sample("a"), Some(0.375), "{text}");
    assert_eq!(sample("b"), None, "not among the 2: {text}");
    // The audit route answers the same figures.
    let body = answer(events, "/v1/audit?top=3", None).await;
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["levels"][0]["under"][0]["account"], "c", "{body}");
    assert_eq!(json["levels"][0]["over"][0]["level_error"], 0.375, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurmrestds_jobs_route_lists_priority_by_partition() {
    // Slurm's test_165_4 setting (crates/engine/tests/cases/
    // slurm_partition_priority_tier.toml, step 1, by hand): job M in
    // ptlow,pthigh lists pthigh (tier 100) first: pthigh 1500, ptlow 2250;
    // its own priority is pthigh's. S has one partition: no entries.
    let events = r#"{"op":"config","t":1000,"set":{"PriorityDecayHalfLife":0,"PriorityWeightAge":0,"PriorityWeightFairshare":0,"PriorityWeightJobSize":0,"PriorityWeightAssoc":0,"PriorityWeightQOS":0,"PriorityWeightPartition":1000,"PriorityWeightTRES":"CPU=4000"}}
{"op":"cluster","t":1000,"nodes":4,"tres":{"cpu":64}}
{"op":"partition","t":1000,"name":"ptlow","priority_job_factor":1,"tres":{"cpu":16},"priority_tier":1}
{"op":"partition","t":1000,"name":"pthigh","priority_job_factor":4,"tres":{"cpu":64},"priority_tier":100}
{"op":"account","t":1000,"name":"lab","shares":1}
{"op":"user","t":1000,"user":"alice","account":"lab","shares":1}
{"op":"submit","t":1000,"job":"7","user":"alice","account":"lab","partition":"ptlow,pthigh","tres":{"cpu":8},"time_limit":90}
{"op":"submit","t":1002,"job":"8","user":"alice","account":"lab","partition":"pthigh","tres":{"cpu":32}}
"#;
    let text = answer(events, "/slurm/v0.0.46/jobs", None).await;
    let response: serde_json::Value = serde_json::from_str(&text).unwrap();
    let jobs = response["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "{text}");
    assert_eq!(jobs[0]["job_id"], 7);
    assert_eq!(jobs[0]["partition"], "pthigh,ptlow");
    assert_eq!(jobs[0]["priority"]["number"], 1500);
    assert_eq!(
        jobs[0]["priority_by_partition"],
        serde_json::json!([{"partition": "pthigh", "priority": 1500}, {"partition": "ptlow", "priority": 2250}])
    );
    assert_eq!(
        jobs[0]["time_limit"]["number"], 2,
        "90 s is 2 minutes, rounded up"
    );
    assert_eq!(jobs[1]["priority_by_partition"], serde_json::json!([]));
    assert_eq!(jobs[1]["priority"]["number"], 3000);
}
