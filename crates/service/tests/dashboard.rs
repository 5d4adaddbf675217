//! The Grafana dashboard in the repository (`packaging/grafana/fairflow.json`)
//! asks only for metrics the service exports: every PromQL expression of
//! every panel (rows' nested panels too) and every templating query is read,
//! its metric names taken out (functions, label matchers, ranges, grouping
//! labels, keywords, numbers and strings left aside) and each is found among
//! the families of a running service's `/metrics`, a histogram's or
//! counter's sample suffix (`_bucket`, `_sum`, `_count`, `_total`, `_info`)
//! naming its family; so a renamed metric fails here.

use axum::body::Body;
use axum::http::Request;
use fairflow_engine::BatchEngine;
use fairflow_model::Config;
use fairflow_service::applier;
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig};
use fairflow_testkit::openmetrics::{self, Exposition};
use tower::ServiceExt;

mod support;

/// Words of PromQL that are not metric names: keywords, binary operators,
/// and the aggregation operators (which may be followed by `by (...)`
/// before their parenthesis).
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "atan2",
    "inf",
    "nan",
    "Inf",
    "NaN",
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "limitk",
    "limit_ratio",
];

/// `text` without what `open`..`close` encloses (brackets do not nest in
/// PromQL's label matchers and ranges; quotes inside matchers are skipped).
fn without_enclosed(text: &str, open: char, close: char) -> String {
    let mut kept = String::new();
    let mut depth = 0usize;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' if depth > 0 => quoted = !quoted,
            c if c == open && !quoted => depth += 1,
            c if c == close && !quoted && depth > 0 => {
                depth -= 1;
                kept.push(' ');
                continue;
            }
            _ => {}
        }
        if depth == 0 && c != open {
            kept.push(c);
        }
    }
    kept
}

/// The metric names a PromQL expression (or a `label_values(metric,
/// label)` templating query) reads.
fn metric_names(expr: &str) -> Vec<String> {
    let expr = match expr.trim().strip_prefix("label_values(") {
        // Only the first argument is a series selector.
        Some(args) => args
            .rsplit_once(',')
            .map_or(args, |(selector, _)| selector)
            .to_string(),
        None => expr.to_string(),
    };
    let expr = without_enclosed(&expr, '{', '}');
    let expr = without_enclosed(&expr, '[', ']');
    let mut names = Vec::new();
    let mut grouping = false;
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace());
            if matches!(
                word.as_str(),
                "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
            ) {
                grouping = true;
            } else if next == Some(&'(') || KEYWORDS.contains(&word.as_str()) || grouping {
                // A function, a keyword, or a grouping list's label.
            } else {
                names.push(word);
            }
            continue;
        }
        if c == ')' {
            grouping = false;
        }
        if c.is_ascii_digit() || c == '.' {
            // A number (with its exponent: 1e300).
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    names
}

/// Every `expr` of every panel and target (nested rows too), and every
/// templating query.
fn expressions(dashboard: &serde_json::Value) -> Vec<String> {
    fn walk(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    match (key.as_str(), inner) {
                        ("expr", serde_json::Value::String(expr)) => found.push(expr.clone()),
                        _ => walk(inner, found),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&dashboard["panels"], &mut found);
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if variable["type"] == "query" {
            found.push(variable["query"]["query"].as_str().unwrap().to_string());
        }
    }
    found
}

/// Does the exposition have the family `name` names (itself, or a sample
/// suffix of its type)?
fn exported(parsed: &Exposition, name: &str) -> bool {
    parsed.families.iter().any(|family| {
        let suffixes: &[&str] = match family.kind.as_str() {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            "info" => &["_info"],
            _ => &[""],
        };
        suffixes
            .iter()
            .any(|s| format!("{}{s}", family.name) == name)
    })
}

#[test]
fn metric_names_are_read_out_of_promql() {
    let expr = "histogram_quantile(0.99, sum by (le) (rate(a_bucket{x=~\"$y\", z=\"(}\"}[$__rate_interval]))) \
                / sum without (instance) (b_total offset 5m) > bool 1e300 or on(job) c:d";
    assert_eq!(metric_names(expr), ["a_bucket", "b_total", "c:d"]);
    assert_eq!(metric_names("label_values(m{u=\"\"}, account)"), ["m"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_asks_for_is_exported() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../packaging/grafana/fairflow.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dashboard["templating"]["list"][0]["type"], "datasource");
    let expressions = expressions(&dashboard);
    assert!(expressions.len() >= 10, "{expressions:?}");
    // A service with everything opt-in on, one batch applied (so the
    // histograms have observations) and a pending job.
    let events = r#"{"op":"account","t":1700000000,"name":"a","shares":1}
{"op":"user","t":1700000000,"user":"u","account":"a","shares":1}
{"op":"usage","t":1700000000,"account":"a","user":"u","amount":100}
{"op":"submit","t":1700000000,"job":"1","user":"u","account":"a"}
"#;
    let engine = BatchEngine::new(Config::default());
    let running = support::start_applier(EngineBackend::new(Box::new(engine)), 1_000);
    let outcome = running
        .applier
        .write(applier::parse_body(events.as_bytes(), 1 << 16))
        .await
        .unwrap();
    assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
    let config = HttpConfig {
        metrics_associations: Some(usize::MAX),
        ..HttpConfig::default()
    };
    let router = http::router(running.applier.clone(), running.metrics.clone(), config);
    let request = Request::get("/metrics").body(Body::empty()).unwrap();
    let response = router.oneshot(request).await.unwrap();
    let body = axum::body::to_bytes(response.into_body(), 1 << 24)
        .await
        .unwrap();
    let scraped = String::from_utf8(body.to_vec()).unwrap();
    let parsed = openmetrics::parse(&scraped).unwrap_or_else(|e| panic!("{e}"));
    for expr in &expressions {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "no metric in `{expr}`");
        for name in names {
            assert!(
                exported(&parsed, &name),
                "`{name}` (in `{expr}`) is not exported:\n{scraped}"
            );
        }
    }
    running.stop().await;
}
