//! The per-association families of `/metrics` scraped through the router
//! and parsed back strictly (`fairflow_testkit::openmetrics`): the exporters'
//! fair-share families (`--metrics-names slurm-exporter`) by name, labels,
//! help and hand-calculated value on a small tree, their user switch, a
//! removed association's series leaving the next scrape, and fairflow's own
//! per-association families written exactly as `prometheus-client` writes
//! them (escapes, non-finite values, family order).

use axum::body::Body;
use axum::http::Request;
use fairflow_engine::BatchEngine;
use fairflow_model::Config;
use fairflow_service::applier;
use fairflow_service::engine_backend::EngineBackend;
use fairflow_service::http::{self, HttpConfig, SCRAPED_TABLES_MAX_AGE};
use fairflow_service::metrics::{MetricsNames, UserSeries};
use fairflow_testkit::openmetrics::{self, Exposition};
use tower::ServiceExt;

mod support;

/// By hand (Fair Tree, no decay): root -> a (3 shares), b (2), c (4); a has
/// user u1 (1 share, usage 200) and account d (1 share) with user u4 (1
/// share, usage 100); b has u2 (usage 100); c has u3 (no usage). Usage 400.
/// Among root's children (9 shares): NormShares a 1/3, b 2/9, c 4/9; usage
/// in the parent a 3/4, b 1/4, c 0: LevelFS a (1/3)/(3/4) = 4/9, b (2/9)/(1/4)
/// = 8/9, c infinite. Within a: u1 and d 1/2 each; u1 (1/2)/(2/3) = 3/4, d
/// (1/2)/(1/3) = 3/2. Users ranked c.u3, b.u2, d.u4, a.u1: FairShare 4/4, 3/4,
/// 2/4, 1/4. NormUsage is usage / 400.
const TREE: &str = r#"{"op":"config","t":1700000000,"set":{"PriorityDecayHalfLife":0}}
{"op":"account","t":1700000000,"name":"a","shares":3}
{"op":"account","t":1700000000,"name":"b","shares":2}
{"op":"account","t":1700000000,"name":"c","shares":4}
{"op":"account","t":1700000000,"name":"d","parent":"a","shares":1}
{"op":"user","t":1700000000,"user":"u1","account":"a","shares":1}
{"op":"user","t":1700000000,"user":"u4","account":"d","shares":1}
{"op":"user","t":1700000000,"user":"u2","account":"b","shares":1}
{"op":"user","t":1700000000,"user":"u3","account":"c","shares":1}
{"op":"usage","t":1700000000,"account":"a","user":"u1","amount":200}
{"op":"usage","t":1700000000,"account":"d","user":"u4","amount":100}
{"op":"usage","t":1700000000,"account":"b","user":"u2","amount":100}
"#;

/// A service on the batch engine fed `events`, its router built by `config`.
struct Served {
    running: support::Running,
    router: axum::Router,
}

impl Served {
    async fn start(events: &str, config: HttpConfig) -> Self {
        let engine = BatchEngine::new(Config::default());
        let running = support::start_applier(EngineBackend::new(Box::new(engine)), 1_000);
        let served = Served {
            router: http::router(running.applier.clone(), running.metrics.clone(), config),
            running,
        };
        served.write(events).await;
        served
    }

    /// Stop the applier (the router's handle goes first, or it would wait).
    async fn stop(self) {
        drop(self.router);
        self.running.stop().await;
    }

    async fn write(&self, events: &str) {
        let lines = applier::parse_body(events.as_bytes(), 1 << 16);
        let outcome = self.running.applier.write(lines).await.unwrap();
        assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
    }

    /// `/metrics`, parsed back (and its text).
    async fn scrape(&self) -> (Exposition, String) {
        let request = Request::get("/metrics").body(Body::empty()).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        let parsed = openmetrics::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        (parsed, text)
    }
}

fn exporter_config(users: UserSeries) -> HttpConfig {
    HttpConfig {
        metrics_names: MetricsNames::SlurmExporter,
        metrics_exporter_users: users,
        ..HttpConfig::default()
    }
}

#[track_caller]
fn close(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("no sample {what}"));
    assert!((got - want).abs() < 1e-12, "{what}: {got} != {want}");
}

/// The exporters' families as their sources declare them: name, label
/// names, help. SckyzO/slurm_exporter `internal/collector/fairshare.go`
/// (`NewFairShareCollector`: `accountLabels := []string{"account"}`,
/// `userLabels := []string{"account", "user"}`); vpenso/prometheus-slurm-exporter
/// `sshare.go` (`slurm_account_fairshare`, labels `account`, "FairShare for
/// account"); guilbaults/prometheus-slurm-exporter `sshare.go`
/// (`slurm_account_normusage`, `_normshares`, `_levelfs`, labels `account`).
const EXPORTER_FAMILIES: [(&str, &[&str], &str); 13] = [
    (
        "slurm_account_fairshare",
        &["account"],
        "FairShare factor for account (0=lowest priority, 1=highest)",
    ),
    (
        "slurm_account_fairshare_raw_shares",
        &["account"],
        "Raw shares allocated to account",
    ),
    (
        "slurm_account_fairshare_norm_shares",
        &["account"],
        "Normalized shares for account (fraction of total shares)",
    ),
    (
        "slurm_account_fairshare_raw_usage_cpu_seconds",
        &["account"],
        "Raw CPU-seconds usage for account (decay-weighted)",
    ),
    (
        "slurm_account_fairshare_norm_usage",
        &["account"],
        "Normalized usage for account (fraction of total usage)",
    ),
    (
        "slurm_user_fairshare",
        &["account", "user"],
        "FairShare factor for user",
    ),
    (
        "slurm_user_fairshare_raw_shares",
        &["account", "user"],
        "Raw shares for user",
    ),
    (
        "slurm_user_fairshare_norm_shares",
        &["account", "user"],
        "Normalized shares for user",
    ),
    (
        "slurm_user_fairshare_raw_usage_cpu_seconds",
        &["account", "user"],
        "Raw CPU-seconds usage for user (decay-weighted)",
    ),
    (
        "slurm_user_fairshare_norm_usage",
        &["account", "user"],
        "Normalized usage for user",
    ),
    (
        "slurm_account_normusage",
        &["account"],
        "NormUsage for account",
    ),
    (
        "slurm_account_normshares",
        &["account"],
        "NormShares for account",
    ),
    ("slurm_account_levelfs", &["account"], "LevelFS for account"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporter_families_have_the_exporters_names_labels_and_hand_values() {
    let served = Served::start(TREE, exporter_config(UserSeries::All)).await;
    let (parsed, text) = served.scrape().await;
    for (name, labels, help) in EXPORTER_FAMILIES {
        let family = parsed
            .family(name)
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        assert_eq!(
            (family.kind.as_str(), family.help.as_str()),
            ("gauge", help)
        );
        for sample in parsed.samples_of(name) {
            let keys: Vec<&str> = sample.labels.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, labels, "{name}");
        }
    }
    // fairflow's own families stay off without --metrics-associations.
    assert!(parsed.family("fairflow_association_fairshare").is_none());
    let account = |name: &str, account: &str| parsed.value(name, &[("account", account)]);
    // SckyzO's account series: every account (root too); an account's
    // FairShare cell is empty in sshare (user rows only), which it reads as 0.
    let accounts = ["root", "a", "d", "b", "c"];
    let count = parsed.samples_of("slurm_account_fairshare").count();
    assert_eq!(count, accounts.len(), "{text}");
    for name in accounts {
        assert_eq!(
            account("slurm_account_fairshare", name),
            Some(0.0),
            "{name}"
        );
    }
    let raw_shares = [
        ("root", 0.0),
        ("a", 3.0),
        ("d", 1.0),
        ("b", 2.0),
        ("c", 4.0),
    ];
    let norm_shares = [
        ("root", 0.0),
        ("a", 1.0 / 3.0),
        ("d", 0.5),
        ("b", 2.0 / 9.0),
        ("c", 4.0 / 9.0),
    ];
    let raw_usage = [
        ("root", 400.0),
        ("a", 300.0),
        ("d", 100.0),
        ("b", 100.0),
        ("c", 0.0),
    ];
    let norm_usage = [
        ("root", 0.0),
        ("a", 0.75),
        ("d", 0.25),
        ("b", 0.25),
        ("c", 0.0),
    ];
    for (family, expected) in [
        ("slurm_account_fairshare_raw_shares", raw_shares),
        ("slurm_account_fairshare_norm_shares", norm_shares),
        ("slurm_account_fairshare_raw_usage_cpu_seconds", raw_usage),
        ("slurm_account_fairshare_norm_usage", norm_usage),
    ] {
        for (name, want) in expected {
            close(
                account(family, name),
                want,
                &format!("{family}{{account={name}}}"),
            );
        }
    }
    // SckyzO's user series.
    let user = |name: &str, account: &str, user: &str| {
        parsed.value(name, &[("account", account), ("user", user)])
    };
    let users = [
        ("a", "u1", 0.25, 0.5, 200.0, 0.5),
        ("d", "u4", 0.5, 1.0, 100.0, 0.25),
        ("b", "u2", 0.75, 1.0, 100.0, 0.25),
        ("c", "u3", 1.0, 1.0, 0.0, 0.0),
    ];
    assert_eq!(
        parsed.samples_of("slurm_user_fairshare").count(),
        users.len()
    );
    for (acct, name, fairshare, norm_shares, raw_usage, norm_usage) in users {
        for (family, want) in [
            ("slurm_user_fairshare", fairshare),
            ("slurm_user_fairshare_raw_shares", 1.0),
            ("slurm_user_fairshare_norm_shares", norm_shares),
            ("slurm_user_fairshare_raw_usage_cpu_seconds", raw_usage),
            ("slurm_user_fairshare_norm_usage", norm_usage),
        ] {
            let what = format!("{family}{{{acct},{name}}}");
            close(user(family, acct, name), want, &what);
        }
    }
    // guilbaults': root and the top-level accounts (sshare indents d two
    // spaces) with NormUsage > 0 and NormShares > 0: a and b.
    for family in [
        "slurm_account_normusage",
        "slurm_account_normshares",
        "slurm_account_levelfs",
    ] {
        let listed: Vec<&str> = parsed
            .samples_of(family)
            .map(|s| s.labels[0].1.as_str())
            .collect();
        assert_eq!(listed, ["a", "b"], "{family}");
    }
    for (family, name, want) in [
        ("slurm_account_normusage", "a", 0.75),
        ("slurm_account_normusage", "b", 0.25),
        ("slurm_account_normshares", "a", 1.0 / 3.0),
        ("slurm_account_normshares", "b", 2.0 / 9.0),
        ("slurm_account_levelfs", "a", 4.0 / 9.0),
        ("slurm_account_levelfs", "b", 8.0 / 9.0),
    ] {
        close(account(family, name), want, &format!("{family}{{{name}}}"));
    }
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporter_user_series_follow_the_switch() {
    // None: no user family at all; the account families stay.
    let served = Served::start(TREE, exporter_config(UserSeries::Off)).await;
    let (parsed, text) = served.scrape().await;
    assert!(parsed.family("slurm_user_fairshare").is_none(), "{text}");
    assert_eq!(parsed.samples_of("slurm_account_fairshare").count(), 5);
    served.stop().await;
    // 2: the two with the most raw usage, ties by account: a.u1 (200), then
    // b.u2 before d.u4 (100 each).
    let served = Served::start(TREE, exporter_config(UserSeries::Most(2))).await;
    let (parsed, _) = served.scrape().await;
    let listed: Vec<(String, String)> = parsed
        .samples_of("slurm_user_fairshare_raw_usage_cpu_seconds")
        .map(|s| (s.labels[0].1.clone(), s.labels[1].1.clone()))
        .collect();
    let pair = |a: &str, u: &str| (a.to_string(), u.to_string());
    assert_eq!(listed, [pair("a", "u1"), pair("b", "u2")]);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_association_leaves_the_next_scrape() {
    let config = HttpConfig {
        metrics_associations: Some(usize::MAX),
        ..exporter_config(UserSeries::All)
    };
    let served = Served::start(TREE, config).await;
    let mentions_d = |parsed: &Exposition| {
        parsed
            .samples
            .iter()
            .filter(|s| s.labels.iter().any(|(k, v)| k == "account" && v == "d"))
            .map(|s| s.name.clone())
            .collect::<Vec<_>>()
    };
    let (parsed, _) = served.scrape().await;
    let before = mentions_d(&parsed);
    for family in [
        "fairflow_association_raw_usage",
        "slurm_account_fairshare",
        "slurm_user_fairshare",
    ] {
        assert!(before.iter().any(|n| n == family), "{family}: {before:?}");
    }
    served
        .write(
            "{\"op\":\"remove_user\",\"t\":1700000001,\"user\":\"u4\",\"account\":\"d\"}\n\
             {\"op\":\"remove_account\",\"t\":1700000001,\"name\":\"d\"}\n",
        )
        .await;
    // Scrapes within SCRAPED_TABLES_MAX_AGE share one read of the table.
    tokio::time::sleep(SCRAPED_TABLES_MAX_AGE + std::time::Duration::from_millis(100)).await;
    let (parsed, text) = served.scrape().await;
    assert_eq!(mentions_d(&parsed), Vec::<String>::new(), "{text}");
    assert_eq!(
        parsed.value("slurm_account_fairshare", &[("account", "a")]),
        Some(0.0)
    );
    served.stop().await;
}
