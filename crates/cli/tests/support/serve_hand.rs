//! The `serve` test's expected answers (crates/cli/tests/serve.rs), worked
//! out by hand from its events, not by the renderers or engines under test.
//!
//! The events: Fair Tree (the default), `PriorityDecayHalfLife` 0 (no
//! decay), weights fair-share 100,000 and age 1,000, `PriorityMaxAge` at
//! Slurm's default of 7 days (604,800 s). Accounts physics (40 shares) and
//! chem (60) under root, users alice (physics) and bob (chem), 1 share each.
//! Usage: alice 3,600 at t0 + 100; bob 7,200 at t0 + 400 (the jobcomp
//! record: 2 CPUs for an hour). Jobs: 1 (alice) submitted at t0 + 200, 2 and
//! 3 (bob) at t0 + 300; the state's time is t0 + 400.
//!
//! - Usage: root 10,800; physics 3,600 (normalised 1/3), chem 7,200 (2/3);
//!   each user is its account's only child: effective usage 1.
//! - Shares: physics 0.4, chem 0.6; each user 1.
//! - LevelFS = shares / usage: physics 0.4 / (1/3) = 1.2, chem 0.6 / (2/3)
//!   = 0.9; each user 1 / 1 = 1.
//! - Fair Tree: physics before chem, so alice is ranked first of the 2
//!   users: factor 2/2 = 1, bob 1/2 = 0.5.
//! - Priorities: job 1 = 100,000 × 1 + 1,000 × 200/604,800 = 100,000.33 ->
//!   100,000; jobs 2 and 3 = 100,000 × 0.5 + 1,000 × 100/604,800 =
//!   50,000.17 -> 50,000. The queue: 1, then 2 and 3 tied (same priority,
//!   same submit time), by job id.
//! - Job 2's place: rank 2, one physics job ahead; to pass job 1 it needs
//!   100,000 - 50,000 + 1 = 50,001 points, or a fair-share factor of
//!   0.5 + 50,001 / 100,000 = 1.00001 alone.

use serde_json::{json, Value};

const MAX_AGE_SECS: f64 = 604_800.0;

/// `got` (JSON text) equal to `want`, numbers within 1e-12 relative.
pub fn assert_json(got: &str, want: &Value) {
    let parsed: Value = serde_json::from_str(got).unwrap_or_else(|e| panic!("{e}: {got}"));
    if let Err(path) = near(&parsed, want, String::new()) {
        panic!("differs at {path}:\n got  {parsed}\n want {want}");
    }
}

fn near(got: &Value, want: &Value, path: String) -> Result<(), String> {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            if (g - w).abs() <= 1e-12 * w.abs().max(1.0) {
                Ok(())
            } else {
                Err(format!("{path} ({g} vs {w})"))
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => g
            .iter()
            .zip(w)
            .enumerate()
            .try_for_each(|(i, (g, w))| near(g, w, format!("{path}[{i}]"))),
        (Value::Object(g), Value::Object(w)) if g.len() == w.len() => {
            w.iter().try_for_each(|(k, w)| {
                let g = g.get(k).ok_or_else(|| format!("{path}.{k} (missing)"))?;
                near(g, w, format!("{path}.{k}"))
            })
        }
        _ if got == want => Ok(()),
        _ => Err(path),
    }
}

/// One `sshare` row.
fn row(account: &str, user: Option<&str>, shares: Option<u64>, norm: f64, usage: u64) -> Value {
    let total = 10_800.0;
    let norm_usage = usage as f64 / total;
    let is_user = user.is_some();
    let level_fs = if is_user { 1.0 } else { norm / norm_usage };
    json!({
        "account": account,
        "user": user,
        "raw_shares": shares,
        "norm_shares": norm,
        "raw_usage": usage,
        "norm_usage": norm_usage,
        "effective_usage": if is_user { 1.0 } else { norm_usage },
        "fairshare": match user { Some("alice") => json!(1.0), Some(_) => json!(0.5), None => Value::Null },
        "level_fs": level_fs,
    })
}

/// `GET /v1/sshare`: root, then each account and its user, by name.
pub fn sshare() -> Value {
    json!([
        {
            "account": "root", "user": null, "raw_shares": null, "norm_shares": 0.0,
            "raw_usage": 10_800, "norm_usage": null, "effective_usage": 1.0,
            "fairshare": null, "level_fs": null,
        },
        row("chem", None, Some(60), 0.6, 7_200),
        row("chem", Some("bob"), Some(1), 1.0, 7_200),
        row("physics", None, Some(40), 0.4, 3_600),
        row("physics", Some("alice"), Some(1), 1.0, 3_600),
    ])
}

/// slurmrestd's shares: the same figures in Slurm's shapes.
pub fn assert_slurm_shares(got: &str) {
    let parsed: Value = serde_json::from_str(got).unwrap();
    let shares = parsed["shares"]["shares"]
        .as_array()
        .expect("shares.shares");
    let by_name = |name: &str| {
        shares
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {got}"))
    };
    for (name, usage, level, factor) in [
        ("chem", 7_200, 0.6 / (2.0 / 3.0), None),
        ("bob", 7_200, 1.0, Some(0.5)),
        ("physics", 3_600, 0.4 / (1.0 / 3.0), None),
        ("alice", 3_600, 1.0, Some(1.0)),
    ] {
        let entry = by_name(name);
        assert_eq!(entry["usage"], usage, "{name}: {entry}");
        let got_level = entry["fairshare"]["level"]["number"].as_f64().unwrap();
        assert!((got_level - level).abs() < 1e-12, "{name}: {entry}");
        if let Some(factor) = factor {
            assert_eq!(entry["fairshare"]["factor"]["number"], factor, "{name}");
        }
    }
}

/// A job's factors as sprio and explain list them.
fn factors(age_secs: f64, fairshare: f64) -> Value {
    let age = age_secs / MAX_AGE_SECS;
    let zero = |name: &str, weight: f64| json!({"cap": null, "component": null, "name": name, "normalized": 0.0, "weight": weight, "weighted": 0.0});
    json!([
        zero("site", 1.0),
        {"cap": null, "component": null, "name": "age", "normalized": age, "weight": 1000.0, "weighted": 1000.0 * age},
        zero("assoc", 0.0),
        {"cap": null, "component": null, "name": "fairshare", "normalized": fairshare, "weight": 100_000.0, "weighted": 100_000.0 * fairshare},
        zero("jobsize", 0.0),
        zero("partition", 0.0),
        zero("qos", 0.0),
        zero("nice", -1.0),
    ])
}

fn job(id: &str, user: &str, account: &str, submit_at: i64, priority: u64) -> Value {
    let fairshare = if user == "alice" { 1.0 } else { 0.5 };
    json!({
        "account": account,
        "factors": factors((1_700_000_400 - submit_at) as f64, fairshare),
        "job_id": id,
        "model": "slurm",
        "partition": "",
        "priority": priority,
        "qos": "",
        "state": "pending",
        "submit_at": submit_at,
        "user": user,
    })
}

/// `GET /v1/sprio`: every job with its factors.
pub fn assert_sprio(got: &str) {
    assert_json(
        got,
        &json!([
            job("1", "alice", "physics", 1_700_000_200, 100_000),
            job("2", "bob", "chem", 1_700_000_300, 50_000),
            job("3", "bob", "chem", 1_700_000_300, 50_000),
        ]),
    );
}

fn entry(rank: u64, id: &str, user: &str, account: &str, priority: u64) -> Value {
    json!({"account": account, "job_id": id, "partition": "", "priority": priority, "qos": "", "rank": rank, "user": user})
}

/// `GET /v1/top?k=2`.
pub fn top_two() -> Value {
    json!([
        entry(1, "1", "alice", "physics", 100_000),
        entry(2, "2", "bob", "chem", 50_000),
    ])
}

/// `GET /v1/top?k=2&offset=1`: the queue from its second entry (job 3
/// ties job 2 and comes after it by id).
pub fn page_from_second() -> Value {
    json!([
        entry(2, "2", "bob", "chem", 50_000),
        entry(3, "3", "bob", "chem", 50_000),
    ])
}

/// `GET /v1/jobs/2/explain`: bob's path and the factor sum.
pub fn assert_explain_of_job_2(got: &str) {
    let parsed: Value = serde_json::from_str(got).unwrap();
    assert_eq!(parsed["priority"], 50_000, "{got}");
    assert_eq!(parsed["algorithm"], "fair_tree", "{got}");
    let sum = 50_000.0 + 1_000.0 * 100.0 / MAX_AGE_SECS;
    assert!(
        (parsed["sum"].as_f64().unwrap() - sum).abs() < 1e-9,
        "{got}"
    );
    let path: Vec<(Value, Value, f64)> = parsed["fairshare_path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["account"].clone(),
                r["user"].clone(),
                r["raw_usage"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        path,
        [
            (json!("root"), Value::Null, 10_800.0),
            (json!("chem"), Value::Null, 7_200.0),
            (json!("chem"), json!("bob"), 7_200.0),
        ],
        "{got}"
    );
    let chem_level = parsed["fairshare_path"][1]["level_fs"].as_f64().unwrap();
    assert!((chem_level - 0.9).abs() < 1e-12, "{got}");
    assert_eq!(parsed["fairshare_path"][2]["fairshare"], 0.5, "{got}");
}

/// `GET /v1/jobs/2/position`: rank 2 behind job 1, 50,001 points short.
pub fn assert_position_of_job_2(got: &str) {
    let parsed: Value = serde_json::from_str(got).unwrap();
    assert_eq!(parsed["rank"], 2, "{got}");
    assert_eq!(parsed["ahead_by_account"], json!({"physics": 1}), "{got}");
    assert_eq!(parsed["ahead_accounts"], 1, "{got}");
    assert_eq!(parsed["job"]["job_id"], "2", "{got}");
    let gap = &parsed["gap"];
    assert_eq!(gap["job_id"], "1", "{got}");
    assert_eq!(gap["points"], 50_001, "{got}");
    let fairshare = gap["factors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "fairshare")
        .unwrap();
    let needed = fairshare["needed"].as_f64().unwrap();
    assert!((needed - 1.00001).abs() < 1e-12, "{got}");
}
