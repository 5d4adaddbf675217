//! Deep account chains in the incremental engine (issue 16, item 2): its
//! tree half holds no (association, ancestor) pair per account, so a chain
//! of depth `d` costs `O(d)` records, not `d²/2` (before, depth 10,000 passed
//! 4 GiB). A chain `root -> a0 -> ... -> a(d-1)` with a user at the bottom
//! (3600 TRES-seconds of usage, one pending job), and the same chain with
//! users at three more depths, are run under every fair-share algorithm:
//! every answer must equal the batch engine's, after the load and after one
//! more usage event at the bottom (the incremental path), and the single
//! user chain must match values computed by hand:
//! - every row of the chain holds all of the usage: raw usage 3600 (charged
//!   at the frame's epoch and read at the same time);
//! - Fair Tree (either tie rule): the one user is ranked 1 of 1, factor 1;
//! - classic: every level has one child of 1 share, so every normalised
//!   share is 1; root's child has effective usage `3600 / 3600 = 1`, and
//!   each level below `UE = UN + (UE_parent − UN) · 1 / 1 = 1`; the factor
//!   is `2^(−UE / S / dampening) = 2^(−1) = 0.5` (dampening 1).
//!
//! The timings are printed (perf/ records them; nothing asserts a time).

use std::collections::BTreeMap;
use std::time::Instant;

use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;

/// The chain's depth (accounts below root).
const DEPTH: usize = 10_000;

/// A chain of `depth` accounts; users `u{level}` at the given levels (the
/// last one must be `depth - 1`), each with `3600 · (k + 1)` of usage and a
/// pending job.
fn chain(depth: usize, user_levels: &[usize]) -> Vec<LogLine> {
    let mut text = Vec::with_capacity(depth + 3 * user_levels.len());
    for i in 0..depth {
        let parent = if i == 0 {
            "root".to_string()
        } else {
            format!("a{}", i - 1)
        };
        text.push(format!(
            r#"{{"op":"account","t":1700000000,"name":"a{i}","parent":"{parent}","shares":1}}"#
        ));
    }
    for (k, level) in user_levels.iter().enumerate() {
        let amount = 3600 * (k + 1);
        text.push(format!(
            r#"{{"op":"user","t":1700000000,"user":"u{level}","account":"a{level}","shares":1}}"#
        ));
        text.push(format!(
            r#"{{"op":"usage","t":1700000000,"account":"a{level}","user":"u{level}","amount":{amount}}}"#
        ));
        text.push(format!(
            r#"{{"op":"submit","t":1700000000,"job":"{k}","user":"u{level}","account":"a{level}"}}"#
        ));
    }
    lines(&text.join("\n"))
}

fn lines(text: &str) -> Vec<LogLine> {
    read_events(text.as_bytes())
        .map(|line| line.expect("in memory"))
        .collect()
}

/// The configurations under test: every algorithm and Fair Tree's two tie
/// rules.
fn configs() -> Vec<(&'static str, Config)> {
    let settings: [(&str, &[(&str, &str)]); 6] = [
        ("fair tree (slurm ties)", &[]),
        ("fair tree (documented)", &[("FairTreeTies", "documented")]),
        ("classic", &[("PriorityFlags", "NO_FAIR_TREE")]),
        ("depth-oblivious", &[("PriorityFlags", "DEPTH_OBLIVIOUS")]),
        ("ticket-based", &[("PriorityFlags", "TICKET_BASED")]),
        ("level-based", &[("PriorityFlags", "LEVEL_BASED")]),
    ];
    settings
        .into_iter()
        .map(|(name, set)| {
            let set: BTreeMap<String, serde_json::Value> = set
                .iter()
                .map(|(key, value)| (key.to_string(), serde_json::Value::from(*value)))
                .collect();
            (name, Config::default().patched(&set).expect("valid"))
        })
        .collect()
}

fn compare(context: &str, batch: &mut BatchEngine, incremental: &mut IncrementalEngine) {
    assert_eq!(
        incremental.fairshare().unwrap(),
        batch.fairshare().unwrap(),
        "{context}: fairshare"
    );
    assert_eq!(
        incremental.user_factors().unwrap(),
        batch.user_factors().unwrap(),
        "{context}: user factors"
    );
    assert_eq!(
        incremental.priorities().unwrap(),
        batch.priorities().unwrap(),
        "{context}: priorities"
    );
}

/// Load `events` into both engines, compare, charge one more usage at the
/// bottom, compare again; returns the incremental engine for more checks.
fn run(name: &str, config: Config, events: Vec<LogLine>, bottom: usize) -> IncrementalEngine {
    let mut batch = BatchEngine::new(config.clone());
    let started = Instant::now();
    let mut incremental = IncrementalEngine::start(1, config).unwrap();
    assert_eq!(incremental.apply(events.clone()).unwrap(), vec![], "{name}");
    let _ = incremental.user_factors().unwrap();
    let loaded = started.elapsed();
    assert_eq!(batch.apply(events).unwrap(), vec![], "{name}");
    compare(&format!("{name}, loaded"), &mut batch, &mut incremental);
    let more = lines(&format!(
        r#"{{"op":"usage","t":1700000000,"account":"a{bottom}","user":"u{bottom}","amount":1800}}"#
    ));
    let started = Instant::now();
    incremental.apply(more.clone()).unwrap();
    let _ = incremental.user_factors().unwrap();
    let event = started.elapsed();
    batch.apply(more).unwrap();
    compare(
        &format!("{name}, one more usage"),
        &mut batch,
        &mut incremental,
    );
    println!(
        "deep chain, {name}: incremental load {:.3} s, one usage event {:.3} s",
        loaded.as_secs_f64(),
        event.as_secs_f64()
    );
    incremental
}

#[test]
fn a_deep_chain_with_one_user_matches_the_hand_values_and_the_batch_engine() {
    let bottom = DEPTH - 1;
    for (name, config) in configs() {
        let algorithm = config.algorithm();
        let mut incremental = run(
            &format!("depth {DEPTH}, {name}"),
            config,
            chain(DEPTH, &[bottom]),
            bottom,
        );
        // Checked before the extra usage by `run`'s comparison; here the
        // values after it: 3600 + 1800 on every row.
        let table = incremental.fairshare().unwrap();
        assert_eq!(table.rows.len(), DEPTH + 2, "{name}: root, chain, user");
        let usages: std::collections::BTreeSet<u64> =
            table.rows.iter().map(|row| row.raw_usage).collect();
        assert_eq!(usages, std::collections::BTreeSet::from([5400]), "{name}");
        let factor =
            incremental.user_factors().unwrap()[&(format!("a{bottom}"), format!("u{bottom}"))];
        match algorithm {
            fairflow_model::Algorithm::FairTree => assert_eq!(factor, 1.0, "{name}"),
            fairflow_model::Algorithm::Classic => assert_eq!(factor, 0.5, "{name}"),
            _ => {}
        }
    }
}

#[test]
fn a_deep_chain_with_users_at_four_depths_matches_the_batch_engine() {
    let levels = [DEPTH / 4, DEPTH / 2, 3 * DEPTH / 4, DEPTH - 1];
    for (name, config) in configs() {
        run(
            &format!("depth {DEPTH}, four users, {name}"),
            config,
            chain(DEPTH, &levels),
            DEPTH - 1,
        );
    }
}

/// A chain with a user (and usage) at every level: the sum at every depth
/// changes with every amount below it (the shape that was `d²/2` while the
/// incremental engine moved amounts one edge per round; its costs are in
/// perf/results/2026-11-24-deep-chain-incremental.md). Depth 1,500 puts
/// associations past the ~1,075 levels where DEPTH_OBLIVIOUS's normalised
/// shares become subnormal; it checks the answers, not the cost.
#[test]
fn a_deep_chain_with_a_user_at_every_level_matches_the_hand_sums_and_the_batch_engine() {
    const EVERY_LEVEL_DEPTH: usize = 1_500;
    let levels: Vec<usize> = (0..EVERY_LEVEL_DEPTH).collect();
    let bottom = EVERY_LEVEL_DEPTH - 1;
    for (name, config) in configs() {
        let mut incremental = run(
            &format!("depth {EVERY_LEVEL_DEPTH}, a user at every level, {name}"),
            config,
            chain(EVERY_LEVEL_DEPTH, &levels),
            bottom,
        );
        // By hand: the user at level `i` has `3600 · (i + 1)` (the bottom
        // one 1800 more, from `run`'s extra event), and account `a_i` holds
        // its subtree's: `3600 · Σ_{m = i+1}^{d} m + 1800`
        // `= 3600 · (d(d+1)/2 − i(i+1)/2) + 1800`; root holds `a0`'s.
        let d = EVERY_LEVEL_DEPTH as u64;
        for row in incremental.fairshare().unwrap().rows {
            let expected = match (&row.user, row.account.as_str()) {
                (None, "root") => 3600 * (d * (d + 1) / 2) + 1800,
                (None, account) => {
                    let i: u64 = account[1..].parse().expect("a<level>");
                    3600 * (d * (d + 1) / 2 - i * (i + 1) / 2) + 1800
                }
                (Some(user), _) => {
                    let i: u64 = user[1..].parse().expect("u<level>");
                    3600 * (i + 1) + if i == d - 1 { 1800 } else { 0 }
                }
            };
            assert_eq!(row.raw_usage, expected, "{name}: {row:?}");
        }
    }
}
