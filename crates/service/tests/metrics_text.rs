//! fairflow's own per-association families, written straight from the
//! fair-share table's rows (`metrics::ScrapedRows`), are the text
//! `prometheus-client` writes for the same gauges set in its `Family`s (as
//! `/metrics` did before it wrote them itself): the same `# HELP`/`# TYPE`
//! lines and the same sample lines (in the rows' order here, in a hash
//! map's order there), label values escaped alike and non-finite values
//! mapped alike; and the whole exposition keeps its families' order.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::{Algorithm, Shares};
use fairflow_service::metrics::{Metrics, MetricsNames, ScrapeSettings, ScrapedRows, UserSeries};
use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A table whose names need every escape and whose values are empty,
/// infinite and ordinary (not a computed tree: only its rows matter here).
fn table() -> FairshareTable {
    let row = |account: &str, user: Option<&str>, depth: usize, usage: u64| {
        let mut row = FairshareRow::new(account, user, depth);
        row.raw_usage = usage;
        row.raw_shares = (depth > 0).then_some(Shares::Value(2));
        row.norm_shares = Some(0.5);
        row.norm_usage = Some(usage as f64 / 1000.0);
        row.effective_usage = (usage > 0).then_some(usage as f64 / 1000.0);
        row.level_fs = Some(if usage == 0 { f64::INFINITY } else { 0.25 });
        row.fairshare = user.map(|_| usage as f64 / 999.0);
        row
    };
    let mut rows = vec![row("root", None, 0, 1000)];
    rows.push(row("quote\"d", None, 1, 600));
    rows.push(row("quote\"d", Some("back\\slash"), 2, 600));
    rows.push(row("quote\"d", Some("new\nline"), 2, 0));
    rows.push(row("plain", None, 1, 400));
    rows.push(row("plain", Some("\u{e9}l\u{e8}ve"), 2, 400));
    rows.push(row("plain", Some("idle"), 2, 0));
    rows[6].level_fs = None;
    FairshareTable {
        algorithm: Algorithm::FairTree,
        as_of: 1_700_000_000,
        rows,
    }
}

type Gauges = Family<Vec<(String, String)>, Gauge<f64, AtomicU64>>;

/// A family's value of a row (`None`: no sample).
type RowValue = dyn Fn(&FairshareRow) -> Option<f64>;

/// The same rows set in `prometheus-client` families named and helped as
/// `/metrics` names them (docs/http.md), encoded by it.
fn encoded_by_prometheus_client(table: &FairshareTable, errors: &[(String, f64)]) -> String {
    let mut root = Registry::default();
    let registry = root.sub_registry_with_prefix("fairflow");
    let finite = |v: f64| {
        if v.is_infinite() {
            f64::MAX.copysign(v)
        } else {
            v
        }
    };
    let families: [(&str, &str, Box<RowValue>); 4] = [
        (
            "association_fairshare",
            "sshare's FairShare of an association (opt-in: --metrics-associations)",
            Box::new(move |r| r.fairshare.map(finite)),
        ),
        (
            "association_level_fs",
            "sshare's LevelFS of an association (infinite: the largest finite f64)",
            Box::new(move |r| r.level_fs.map(finite)),
        ),
        (
            "association_raw_usage",
            "sshare's RawUsage of an association",
            Box::new(|r| Some(r.raw_usage as f64)),
        ),
        (
            "association_effective_usage",
            "sshare's EffectvUsage of an association",
            Box::new(move |r| r.effective_usage.map(finite)),
        ),
    ];
    for (name, help, value) in families {
        let family = Gauges::default();
        for row in &table.rows {
            let labels = vec![
                ("account".to_string(), row.account.clone()),
                ("user".to_string(), row.user.clone().unwrap_or_default()),
            ];
            if let Some(value) = value(row) {
                family.get_or_create(&labels).set(value);
            }
        }
        registry.register(name, help, family);
    }
    let fairness = Gauges::default();
    for (account, error) in errors {
        let labels = vec![("account".to_string(), account.clone())];
        fairness.get_or_create(&labels).set(*error);
    }
    registry.register(
        "fairness_error",
        "An account's usage share minus its shares among its siblings (above 0: over-served; \
         opt-in: the --metrics-associations accounts with the largest error)",
        fairness,
    );
    let mut text = String::new();
    encode_registry(&mut text, &root).unwrap();
    text
}

/// Each family's metadata lines, then its sample lines sorted.
fn by_family(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut families: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# HELP ") {
            families.push((vec![line.to_string()], Vec::new()));
        } else if line.starts_with('#') {
            families.last_mut().unwrap().0.push(line.to_string());
        } else {
            families.last_mut().unwrap().1.push(line.to_string());
        }
    }
    for (_, samples) in &mut families {
        samples.sort();
    }
    families
}

fn every_association() -> ScrapeSettings {
    ScrapeSettings {
        associations: Some(usize::MAX),
        ..ScrapeSettings::default()
    }
}

#[test]
fn fairflow_families_are_written_as_prometheus_client_writes_them() {
    let table = table();
    let audit = fairflow_serve::audit::audit(&table, Vec::new(), 1_700_000_000);
    let errors = fairflow_serve::audit::account_errors(&audit, usize::MAX);
    assert!(
        !errors.is_empty(),
        "the table has accounts with a level error"
    );
    let expected = encoded_by_prometheus_client(&table, &errors);
    let rows = ScrapedRows::select(Arc::new(table), 1_700_000_000, &every_association());
    let mut written = String::new();
    rows.write_associations(&mut written);
    assert_eq!(
        by_family(&written),
        by_family(&expected),
        "\n{written}\n---\n{expected}"
    );
    // The escapes and the mapped infinity are there (not merely equal).
    for line in [
        "fairflow_association_raw_usage{account=\"quote\\\"d\",user=\"back\\\\slash\"} 600.0",
        "fairflow_association_level_fs{account=\"quote\\\"d\",user=\"new\\nline\"} 1.7976931348623157e308",
    ] {
        assert!(written.lines().any(|l| l == line), "no `{line}` in\n{written}");
    }
    // Most raw usage first, ties by account then user.
    let users: Vec<&str> = written
        .lines()
        .filter(|l| l.starts_with("fairflow_association_raw_usage{"))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        users,
        [
            "fairflow_association_raw_usage{account=\"root\",user=\"\"}",
            "fairflow_association_raw_usage{account=\"quote\\\"d\",user=\"\"}",
            "fairflow_association_raw_usage{account=\"quote\\\"d\",user=\"back\\\\slash\"}",
            "fairflow_association_raw_usage{account=\"plain\",user=\"\"}",
            "fairflow_association_raw_usage{account=\"plain\",user=\"\u{e9}l\u{e8}ve\"}",
            "fairflow_association_raw_usage{account=\"plain\",user=\"idle\"}",
            "fairflow_association_raw_usage{account=\"quote\\\"d\",user=\"new\\nline\"}",
        ]
    );
}

#[test]
fn the_exposition_keeps_its_families_order_and_parses_back() {
    let metrics = Metrics::new();
    let settings = ScrapeSettings {
        names: MetricsNames::SlurmExporter,
        exporter_users: UserSeries::All,
        ..every_association()
    };
    let rows = ScrapedRows::select(Arc::new(table()), 1_700_000_000, &settings);
    metrics.set_scraped(Some(Arc::new(rows)));
    metrics.set_queue_head(Some(1500));
    let text = metrics.render(None, 0);
    let parsed = fairflow_testkit::openmetrics::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let order: Vec<&str> = parsed.families.iter().map(|f| f.name.as_str()).collect();
    // The registry's order (fairflow's own per-association families after
    // the build info, as before they were written by hand); the exporters'
    // families last.
    let mut expected = vec![
        "process_cpu_seconds",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
        "fairflow_batch_events",
        "fairflow_event_time_seconds",
        "fairflow_ingest_lag_seconds",
        "fairflow_build",
        "fairflow_association_fairshare",
        "fairflow_association_level_fs",
        "fairflow_association_raw_usage",
        "fairflow_association_effective_usage",
        "fairflow_fairness_error",
        "fairflow_events_applied",
        "fairflow_response_held_bytes",
        "fairflow_response_held_table_bytes",
        "fairflow_events_rejected",
        "fairflow_batches",
        "fairflow_checkpoints",
        "fairflow_writes_refused",
        "fairflow_engine_rebuilds",
        "fairflow_whatifs_stopped",
        "fairflow_update_latency_seconds",
        "fairflow_pending_jobs",
        "fairflow_associations",
        "fairflow_queued_batches",
        "fairflow_resident_memory_bytes",
        "fairflow_slurm_polls",
        "fairflow_slurm_poll_failures",
        "fairflow_slurm_usage_reconciliations",
        "fairflow_slurm_last_good_poll_age_seconds",
        "fairflow_queue_head_priority",
    ];
    expected.extend([
        "slurm_account_fairshare",
        "slurm_account_fairshare_raw_shares",
        "slurm_account_fairshare_norm_shares",
        "slurm_account_fairshare_raw_usage_cpu_seconds",
        "slurm_account_fairshare_norm_usage",
        "slurm_user_fairshare",
        "slurm_user_fairshare_raw_shares",
        "slurm_user_fairshare_norm_shares",
        "slurm_user_fairshare_raw_usage_cpu_seconds",
        "slurm_user_fairshare_norm_usage",
        "slurm_account_normusage",
        "slurm_account_normshares",
        "slurm_account_levelfs",
    ]);
    assert_eq!(order, expected, "{text}");
    assert_eq!(
        parsed.value("fairflow_queue_head_priority", &[]),
        Some(1500.0)
    );
    // Without a job in line, the head has no sample (nor family).
    metrics.set_queue_head(None);
    assert!(!metrics
        .render(None, 0)
        .contains("fairflow_queue_head_priority"));
}
