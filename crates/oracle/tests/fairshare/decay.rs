//! Decay and reset arithmetic through `State`, `Replay` and the sshare table:
//! the RawUsage column after half-lives, without decay, for running jobs
//! (hand integrals), with QOS `UsageFactor` and partition
//! `TRESBillingWeights`, across `reset_usage`, a `DAILY` reset period and a
//! half-life change.

use super::support::*;
use serde_json::json;

/// Midnight after T0 (2023-11-15T00:00:00Z) and the one after it.
const MIDNIGHT_1: i64 = 1_700_006_400;
const MIDNIGHT_2: i64 = 1_700_092_800;
const DAY: i64 = 86_400;

fn raw_usage(lines: &[String], account: &str, user: Option<&str>) -> u64 {
    row(&table_of(lines), account, user).raw_usage
}

fn tree_with_user(half_life: &str) -> Vec<String> {
    vec![
        config(T0, &[("PriorityDecayHalfLife", half_life)]),
        account(T0, "a", "root", "1"),
        user(T0, "u", "a", "1"),
        user(T0, "v", "a", "1"),
    ]
}

#[test]
fn usage_halves_every_half_life() {
    // 1000 TRES-s charged at T0 with a 1-day half-life: 500 after a day, 250
    // after two, for the user, its account and root alike.
    let mut lines = tree_with_user("1-0");
    lines.push(usage(T0, "a", "u", 1000.0));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 1000);
    lines.push(bare(T0 + DAY, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 500);
    assert_eq!(raw_usage(&lines, "a", None), 500);
    assert_eq!(raw_usage(&lines, "root", None), 500);
    // 1000 more charged to v now: v 1000, u 500, so u's NormUsage is 1/3.
    lines.push(usage(T0 + DAY, "a", "v", 1000.0));
    let table = table_of(&lines);
    assert_eq!(row(&table, "root", None).raw_usage, 1500);
    assert_close(
        row(&table, "a", Some("u")).norm_usage,
        1.0 / 3.0,
        1e-12,
        "UN u",
    );
    lines.push(bare(T0 + 2 * DAY, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 250);
    assert_eq!(raw_usage(&lines, "a", Some("v")), 500);
    // Half a half-life: 250 * 2^-0.5 = 176.78 -> 176.
    lines.push(bare(T0 + 2 * DAY + DAY / 2, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 176);
}

#[test]
fn no_decay_with_a_zero_half_life() {
    let mut lines = tree_with_user("0");
    lines.push(usage(T0, "a", "u", 1000.0));
    lines.push(bare(T0 + 30 * DAY, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 1000);
    lines.push(usage(T0 + 40 * DAY, "a", "u", 0.5));
    lines.push(usage(T0 + 50 * DAY, "a", "u", 0.5));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 1001);
}

#[test]
fn a_running_job_accrues_its_integral() {
    // Without decay: 4 CPUs for 100 s is 400 while running; the job ends at
    // T0 + 250 with 1000, which then stays.
    let mut lines = tree_with_user("0");
    lines.push(submit(T0, "1", "a", "u", json!({"tres": {"cpu": 4}})));
    lines.push(job_op(T0, "start", "1"));
    lines.push(bare(T0 + 100, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 400);
    lines.push(job_op(T0 + 250, "end", "1"));
    lines.push(bare(T0 + 1000, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 1000);
    assert_eq!(raw_usage(&lines, "root", None), 1000);

    // With a 1-hour half-life h, 2 CPUs over [0, h] seen at h:
    // integral of 2 * 2^(-(h - x)/h) dx = 2h / ln 2 * (1 - 1/2) = h / ln 2
    // = 3600 / 0.69314718 = 5193.70 -> 5193.
    // Half-way, over [0, h/2] seen at h/2: 2h / ln 2 * (1 - 2^-0.5)
    // = 10387.40 * 0.29289322 = 3042.40 -> 3042.
    let mut lines = tree_with_user("1:00:00");
    lines.push(submit(T0, "1", "a", "u", json!({"tres": {"cpu": 2}})));
    lines.push(job_op(T0, "start", "1"));
    lines.push(bare(T0 + 1800, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 3042);
    lines.push(job_op(T0 + 3600, "end", "1"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 5193);
    // One more half-life after the end: 5193.70 / 2 = 2596.85 -> 2596.
    lines.push(bare(T0 + 7200, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 2596);
}

#[test]
fn qos_usage_factor_and_partition_billing_weights_change_the_charge() {
    let base = || {
        let mut lines = tree_with_user("0");
        lines
            .push(json!({"op": "qos", "t": T0, "name": "double", "usage_factor": 2.0}).to_string());
        lines.push(
            json!({"op": "partition", "t": T0, "name": "gpu",
                "tres_billing_weights": "CPU=1.0,Mem=0.25G"})
            .to_string(),
        );
        lines
    };
    let run = |spec: serde_json::Value| {
        let mut lines = base();
        lines.push(submit(T0, "1", "a", "u", spec));
        lines.push(job_op(T0, "start", "1"));
        lines.push(job_op(T0 + 100, "end", "1"));
        raw_usage(&lines, "a", Some("u"))
    };
    let request = json!({"cpu": 1, "mem": 8192});
    // No partition, no QOS: billable = CPUs = 1 per second, 100 s: 100.
    assert_eq!(run(json!({"tres": request})), 100);
    // UsageFactor 2: 200.
    assert_eq!(run(json!({"tres": request, "qos": "double"})), 200);
    // CPU=1.0,Mem=0.25G: 1 * 1 + 8 GiB * 0.25 = 3 per second: 300.
    assert_eq!(run(json!({"tres": request, "partition": "gpu"})), 300);
    // Both: 3 * 2 = 6 per second: 600.
    assert_eq!(
        run(json!({"tres": request, "partition": "gpu", "qos": "double"})),
        600
    );
}

#[test]
fn a_reset_usage_event_zeroes_everything() {
    let mut lines = tree_with_user("0");
    lines.push(usage(T0, "a", "u", 1000.0));
    lines.push(account_usage(T0, "a", 7.0));
    lines.push(submit(T0, "1", "a", "v", json!({"tres": {"cpu": 1}})));
    lines.push(job_op(T0, "start", "1"));
    lines.push(bare(T0 + 100, "reset_usage"));
    let table = table_of(&lines);
    assert!(table.rows.iter().all(|r| r.raw_usage == 0));
    // Afterwards, new usage counts from zero and the running job accrues
    // from the reset: 1 CPU for 50 s.
    lines.push(usage(T0 + 120, "a", "u", 20.0));
    lines.push(bare(T0 + 150, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 20);
    assert_eq!(raw_usage(&lines, "a", Some("v")), 50);
    assert_eq!(raw_usage(&lines, "root", None), 70);
}

#[test]
fn a_daily_reset_period_crosses_midnight() {
    // T0 is 22:13:20 UTC; the reset happens at the next midnight.
    let mut lines = tree_with_user("0");
    lines.push(config(T0, &[("PriorityUsageResetPeriod", "DAILY")]));
    lines.push(usage(T0, "a", "u", 1000.0));
    lines.push(submit(T0, "1", "a", "v", json!({"tres": {"cpu": 1}})));
    lines.push(job_op(T0, "start", "1"));
    lines.push(bare(MIDNIGHT_1 - 1, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 1000);
    // v's job ran MIDNIGHT_1 - 1 - T0 = 6399 s.
    assert_eq!(raw_usage(&lines, "a", Some("v")), 6399);
    lines.push(bare(MIDNIGHT_1, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 0);
    assert_eq!(raw_usage(&lines, "a", Some("v")), 0);
    // Usage after midnight counts; the job accrues again from midnight.
    lines.push(usage(MIDNIGHT_1 + 100, "a", "u", 10.0));
    lines.push(bare(MIDNIGHT_1 + 100, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 10);
    assert_eq!(raw_usage(&lines, "a", Some("v")), 100);
    // A jump past the next midnight resets again, even with no event at it:
    // the job's accrual restarts at MIDNIGHT_2.
    lines.push(bare(MIDNIGHT_2 + 5, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 0);
    assert_eq!(raw_usage(&lines, "a", Some("v")), 5);
}

#[test]
fn a_half_life_change_keeps_the_present_value_and_decays_at_the_new_rate() {
    // 1000 at T0 with a 1-day half-life: 500 at T0 + 1 day. The half-life
    // becomes 2 days there: still 500, then 250 two days later.
    let mut lines = tree_with_user("1-0");
    lines.push(usage(T0, "a", "u", 1000.0));
    lines.push(config(T0 + DAY, &[("PriorityDecayHalfLife", "2-0")]));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 500);
    lines.push(bare(T0 + 3 * DAY, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 250);
    // Turning decay off keeps the value as it is from then on.
    lines.push(config(T0 + 3 * DAY, &[("PriorityDecayHalfLife", "0")]));
    lines.push(bare(T0 + 30 * DAY, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 250);
}

#[test]
fn a_running_job_across_a_half_life_change() {
    // No decay first: 1 CPU from T0 accrues 100 by T0 + 100, when a 1-hour
    // half-life h starts. One half-life later the first 100 is worth 50 and
    // the accrual since the change is h / (2 ln 2) = 3600 / 1.38629436
    // = 2596.85: 2646.85 -> 2646.
    let mut lines = tree_with_user("0");
    lines.push(submit(T0, "1", "a", "u", json!({"tres": {"cpu": 1}})));
    lines.push(job_op(T0, "start", "1"));
    lines.push(config(T0 + 100, &[("PriorityDecayHalfLife", "1:00:00")]));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 100);
    lines.push(bare(T0 + 100 + 3600, "tick"));
    assert_eq!(raw_usage(&lines, "a", Some("u")), 2646);
}

#[test]
fn decay_cancels_in_the_ratios() {
    // Usage decays, but charges made at the same time keep their ratios:
    // u 300 and v 100 at T0, seen five half-lives later: NormUsage .75 / .25.
    let mut lines = tree_with_user("1-0");
    lines.push(usage(T0, "a", "u", 300.0));
    lines.push(usage(T0, "a", "v", 100.0));
    lines.push(bare(T0 + 5 * DAY, "tick"));
    let table = table_of(&lines);
    assert_eq!(row(&table, "a", Some("u")).norm_usage, Some(0.75));
    assert_eq!(row(&table, "a", Some("v")).norm_usage, Some(0.25));
    // 400 / 32 = 12.5 -> 12.
    assert_eq!(row(&table, "root", None).raw_usage, 12);
}
