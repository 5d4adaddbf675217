//! `fairflow bench` at a tiny size: the `--json` report has every key the
//! outside checks read, with the right types and consistent values. Nothing
//! here asserts a speed (performance is measured, never asserted in tests).

use std::process::Command;

use serde_json::Value;

fn bench(workers: &str, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_fairflow"))
        .args([
            "bench",
            "--associations",
            "200",
            "--jobs",
            "2000",
            "--workers",
            workers,
            "--seed",
            "3",
            "--samples-scale",
            "0.05",
            "--oracle-samples",
            "1",
            "--json",
        ])
        .args(extra)
        .output()
        .expect("run fairflow");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

fn positive(value: &Value, what: &str) -> f64 {
    let x = value
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {value}"));
    assert!(x > 0.0, "{what} = {x}");
    x
}

const UPDATES: [&str; 6] = [
    "submit",
    "start_end",
    "usage_event",
    "usage_batch_1000",
    "share_change",
    "reorg_10000",
];

fn check(report: &Value, workers: u64) {
    assert_eq!(report["associations"], 200);
    assert_eq!(report["jobs"], 2000);
    assert_eq!(report["workers"], workers);
    positive(&report["load_secs"], "load_secs");
    assert!(report["peak_rss_bytes"].as_u64().is_some_and(|b| b > 0));
    let topk = &report["topk_read"];
    assert_eq!(topk["k"], 100);
    let p50 = positive(&topk["p50_us"], "topk p50");
    let p99 = positive(&topk["p99_us"], "topk p99");
    assert!(p50 <= p99);
    // 1,000 reads scaled by 0.05: 50 computed, alternately after a moved
    // time and after a usage event, and 50 cached.
    assert_eq!(topk["samples"], 50);
    assert_eq!(topk["after_time_move"]["samples"], 25);
    assert_eq!(topk["after_fact_change"]["samples"], 25);
    positive(&topk["after_time_move"]["p99_us"], "after a time move");
    positive(&topk["after_fact_change"]["p99_us"], "after a fact change");
    assert_eq!(report["topk_read_cached"]["samples"], 50);
    assert_eq!(report["topk_read_cached"]["k"], 100);
    for key in UPDATES {
        let u = &report["updates"][key];
        let p50 = positive(&u["p50_us"], key);
        let p99 = positive(&u["p99_us"], key);
        let p999 = positive(&u["p999_us"], key);
        let max = positive(&u["max_us"], key);
        assert!(p50 <= p99 && p99 <= p999 && p999 <= max, "{key}: {u}");
        assert!(u["touched_records_mean"].as_f64().is_some(), "{key}: {u}");
        positive(&u["full_recompute_us"], key);
        positive(&u["ratio"], key);
    }
    check_touched(report);
    // A 1,000-event batch is 1,000 events.
    assert_eq!(
        report["updates"]["usage_batch_1000"]["events_per_batch"],
        1000.0
    );
    assert!(report["commit"].is_string());
    assert!(report["machine"]["cores"].as_u64().is_some_and(|c| c > 0));
    assert_eq!(report["topk_matches_oracle"], true);
    check_reads(report);
    check_baselines(report);
}

/// The records each update touches, within bounds worked out by hand for
/// this cluster (2,000 pending jobs, a few hundred associations): what a
/// change must reach and what it must not.
fn check_touched(report: &Value) {
    let touched = |key: &str| {
        report["updates"][key]["touched_records_mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {}", report["updates"][key]))
    };
    let associations = report["baselines"]["associations"].as_f64().unwrap();
    // A change that reaches every association (usage, level, placement and
    // factor facts, each retracted and inserted) and no job.
    let per_association_bound = 8.0 * associations + 1.0;
    // Under continuous accrual (`PriorityCalcPeriod` 0) every event that
    // moves time also charges the running jobs' usage to their associations.
    let accrual = if report["calc_period_secs"] == 0 {
        per_association_bound
    } else {
        0.0
    };
    // A submission: its input row, its job row and its priority record at
    // least; at most those, its queue entry and its user's entry (each an
    // insertion, and a retraction where one is replaced) and its user's
    // pending count under the algorithms that count jobs: a handful, never
    // a pass over the queue.
    let submit = touched("submit");
    assert!(
        (2.0..=12.0 + accrual).contains(&submit),
        "submit touched {submit}"
    );
    // A usage event or a share change re-evaluates no job (the fair-share
    // term meets the job records per user association, in the queue): at
    // most every association's facts plus its input, fewer than the 2,000
    // pending jobs a per-job pass would touch.
    for key in ["usage_event", "share_change"] {
        let n = touched(key);
        assert!(
            n >= 2.0 && n <= per_association_bound && n < 2_000.0,
            "{key} touched {n} (bound {per_association_bound})"
        );
    }
    // 1,000 usage events in one batch: their inputs and at most the same
    // per-association bound once, as the batch consolidates.
    let batch = touched("usage_batch_1000");
    assert!(
        (1_000.0..=1_000.0 + per_association_bound).contains(&batch),
        "usage_batch_1000 touched {batch}"
    );
}

/// Each read's samples at `--samples-scale 0.05` (the defaults 30, 30, 5,
/// 200, 20, 20, 10, 20, 3, 1 scaled and rounded, at least one), and the states
/// the oracle checks: `--oracle-samples 1` of each.
const READS: [(&str, u64); 10] = [
    ("position", 2),
    ("top_offset", 2),
    ("whatif", 1),
    ("explain", 10),
    ("audit", 1),
    ("sshare", 1),
    ("metrics", 1),
    ("history", 1),
    ("restart", 1),
    ("one_off_top", 1),
];

fn check_reads(report: &Value) {
    let reads = report["reads"].as_object().expect("a reads object");
    assert_eq!(reads.len(), READS.len(), "{reads:?}");
    for (key, samples) in READS {
        let r = &report["reads"][key];
        assert_eq!(r["samples"], samples, "{key}: {r}");
        let p50 = positive(&r["p50_us"], key);
        let p99 = positive(&r["p99_us"], key);
        assert!(p50 <= p99, "{key}: {r}");
        // Every answer equals the oracle's on the same state.
        assert_eq!(r["matches_oracle"], true, "{key}: {r}");
        assert_eq!(r["oracle_states"], 1, "{key}: {r}");
        positive(&r["p99_target_us"], key);
    }
    // Issue 36's targets, in microseconds.
    assert_eq!(report["reads"]["explain"]["p99_target_us"], 1_000.0);
    assert_eq!(report["reads"]["sshare"]["p99_target_us"], 300_000.0);
    assert_eq!(report["reads"]["restart"]["p99_target_us"], 15_000_000.0);
}

fn check_baselines(report: &Value) {
    let b = &report["baselines"];
    positive(&b["oracle_full_recompute_us"], "oracle baseline");
    positive(&b["lean_full_recompute_us"], "lean baseline");
    assert_eq!(b["lean_topk_matches_oracle"], true, "{b}");
    // 2,000 pending jobs generated; the 10 submissions add 10 and the 10
    // start_end samples start (and end) 10 of them.
    assert_eq!(b["pending_jobs"], 2000, "{b}");
    let associations = b["associations"].as_u64().expect("associations");
    // 200 user associations and their accounts (root among them).
    assert!(associations > 200, "{b}");
    // Slurm's cycle: 0.7 us per pending job and 0.6 us per association.
    let slurm = positive(&b["slurm_cycle_us"], "slurm cycle");
    let expected = 0.7 * 2000.0 + 0.6 * associations as f64;
    assert!((slurm - expected).abs() < 1e-6, "{slurm} != {expected}");
    let topk_p50 = positive(&report["topk_read"]["p50_us"], "topk p50");
    let ratio = positive(&b["ratios"]["topk_read"]["slurm_cycle"], "slurm ratio");
    assert!((ratio - slurm / topk_p50).abs() <= 1e-9 * ratio, "{b}");
    positive(
        &b["ratios"]["usage_event"]["lean_full_recompute"],
        "lean ratio",
    );
}

#[test]
fn the_json_report_has_every_key_with_one_worker() {
    let report = bench("1", &[]);
    check(&report, 1);
    // Slurm's default period, settled by ticks as `serve` settles it.
    assert_eq!(report["calc_period_secs"], 300);
    assert_eq!(report["calc_period_ticks"], true);
}

#[test]
fn the_json_report_has_every_key_with_two_workers() {
    check(&bench("2", &[]), 2);
}

/// `--calc-period 0`: continuous accrual, no boundary to settle; the
/// engine's last top (after the reads' moved times and usage events) still
/// equals the oracle's on the same stream.
#[test]
fn continuous_accrual_is_measured_with_calc_period_zero() {
    let report = bench("1", &["--calc-period", "0"]);
    check(&report, 1);
    assert_eq!(report["calc_period_secs"], 0);
    assert_eq!(report["calc_period_ticks"], false);
    assert!(report["updates"]["calc_period_tick"].is_null());
}
