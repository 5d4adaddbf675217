//! Helpers for the fair-share tests: event lines, replaying them, finding
//! rows and comparing floating-point cells.

use fairflow_ingest::{parse_event, LogLine};
use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Config;
use fairflow_oracle::fairshare;
use fairflow_oracle::Replay;

/// The time every example happens at (2023-11-14T22:13:20Z).
pub const T0: i64 = 1_700_000_000;

/// The seed document's example (slurm-classic-fairshare.txt, Figure 3), under
/// `PriorityFlags=flags`: root -> A (40) -> B (30) -> user1; A -> C (10) ->
/// user2, user3; root -> D (60) -> E (25) -> user4; D -> F (35) -> user5; all
/// users 1 share. Usage 0.2, 0.25, 0.25 of the machine for users 1, 2 and 4.
/// The other 0.3 is history charged to root itself (as if from a departed
/// association), so that root's total is the machine's and each user's
/// NormUsage is exactly the document's fraction.
pub fn seed_tree(flags: &str) -> Vec<String> {
    vec![
        config(T0, &[("PriorityFlags", flags)]),
        account(T0, "A", "root", "40"),
        account(T0, "D", "root", "60"),
        account(T0, "B", "A", "30"),
        account(T0, "C", "A", "10"),
        account(T0, "E", "D", "25"),
        account(T0, "F", "D", "35"),
        user(T0, "user1", "B", "1"),
        user(T0, "user2", "C", "1"),
        user(T0, "user3", "C", "1"),
        user(T0, "user4", "E", "1"),
        user(T0, "user5", "F", "1"),
        usage(T0, "B", "user1", 200.0),
        usage(T0, "C", "user2", 250.0),
        usage(T0, "E", "user4", 250.0),
        account_usage(T0, "root", 300.0),
    ]
}

/// A `config` event.
pub fn config(t: i64, set: &[(&str, &str)]) -> String {
    let set: serde_json::Map<String, serde_json::Value> = set
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    serde_json::json!({"op": "config", "t": t, "set": set}).to_string()
}

fn shares_value(shares: &str) -> serde_json::Value {
    match shares.parse::<u64>() {
        Ok(n) => serde_json::Value::from(n),
        Err(_) => serde_json::Value::from(shares),
    }
}

/// An `account` event; `shares` is a number or `parent`.
pub fn account(t: i64, name: &str, parent: &str, shares: &str) -> String {
    serde_json::json!({"op": "account", "t": t, "name": name, "parent": parent,
        "shares": shares_value(shares)})
    .to_string()
}

/// A `user` event; `shares` is a number or `parent`.
pub fn user(t: i64, name: &str, account: &str, shares: &str) -> String {
    serde_json::json!({"op": "user", "t": t, "user": name, "account": account,
        "shares": shares_value(shares)})
    .to_string()
}

/// A `usage` event charged to a user association.
pub fn usage(t: i64, account: &str, user: &str, amount: f64) -> String {
    serde_json::json!({"op": "usage", "t": t, "account": account, "user": user, "amount": amount})
        .to_string()
}

/// A `usage` event charged to an account itself.
pub fn account_usage(t: i64, account: &str, amount: f64) -> String {
    serde_json::json!({"op": "usage", "t": t, "account": account, "amount": amount}).to_string()
}

/// A `submit` event with a TRES request.
pub fn submit(t: i64, job: &str, account: &str, user: &str, extra: serde_json::Value) -> String {
    let mut event = serde_json::json!({"op": "submit", "t": t, "job": job, "account": account,
        "user": user});
    if let serde_json::Value::Object(fields) = extra {
        for (k, v) in fields {
            event[k] = v;
        }
    }
    event.to_string()
}

/// An event naming only a job (`start`, `end`, `hold`, ...).
pub fn job_op(t: i64, op: &str, job: &str) -> String {
    serde_json::json!({"op": op, "t": t, "job": job}).to_string()
}

/// An event with no fields but `op` and `t` (`tick`, `reset_usage`).
pub fn bare(t: i64, op: &str) -> String {
    serde_json::json!({"op": op, "t": t}).to_string()
}

/// Replay `lines` from an empty cluster; every line must be accepted.
pub fn replay(lines: &[String]) -> Replay {
    let mut replay = Replay::new(Config::default());
    for (i, text) in lines.iter().enumerate() {
        let line = i as u64 + 1;
        replay.feed(LogLine {
            line,
            event: parse_event(line, text),
        });
    }
    assert!(
        replay.report.rejected.is_empty(),
        "rejected: {:?}",
        replay.report.rejected
    );
    replay
}

/// Replay `lines` and return the fair-share table.
pub fn table_of(lines: &[String]) -> FairshareTable {
    fairshare::table(replay(lines).state())
}

/// The row of an account (`user` `None`) or user association.
pub fn row<'a>(table: &'a FairshareTable, account: &str, user: Option<&str>) -> &'a FairshareRow {
    table
        .rows
        .iter()
        .find(|r| r.account == account && r.user.as_deref() == user)
        .unwrap_or_else(|| panic!("no row for {account}/{user:?}"))
}

/// Assert `actual` is within `tolerance` of `expected`.
#[track_caller]
pub fn assert_close(actual: Option<f64>, expected: f64, tolerance: f64, what: &str) {
    let actual = actual.unwrap_or_else(|| panic!("{what}: empty cell, expected {expected}"));
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} is not within {tolerance} of {expected}"
    );
}
