//! The engine's fair-share table equals the oracle's (`==`, every `f64`
//! bit-exact) after every batch of seeded random streams with retractions
//! (share changes incl. `parent`, moves, removals, ends, requeues, resets,
//! half-life and calc-period changes, algorithm switches, `PriorityLevels`
//! changes, submissions, starts, ends, holds and cancels, which move the
//! ticket-based algorithm's active associations), for 1, 2 and 4 workers;
//! and every user's path from `root` (`explain`'s rows) equals the table's.
//! Tables wide enough to be built on every core (`PARALLEL_ROWS_MIN`)
//! equal the oracle's too, under every algorithm. `FAIRFLOW_HEAVY=1` runs a
//! much larger sweep.

mod common;

use common::{Stream, StreamShape};
use fairflow_dataflow::{Engine, PARALLEL_ROWS_MIN};
use fairflow_ingest::reader::read_events;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, Replay};

const FLAGS: &[&str] = &[
    "",
    "NO_FAIR_TREE",
    "DEPTH_OBLIVIOUS",
    "NO_FAIR_TREE,MAX_TRES",
    "TICKET_BASED",
    "LEVEL_BASED",
];

/// `PriorityLevels` for the runs that start level-based (the stream changes
/// it too).
const LEVELS: &[u32] = &[4, 1, 3, 16, 2];

fn config(flags: &str, levels: u32) -> Config {
    config_with_ties(flags, levels, "slurm")
}

fn config_with_ties(flags: &str, levels: u32, ties: &str) -> Config {
    let mut set = std::collections::BTreeMap::new();
    set.insert("FairTreeTies".to_string(), serde_json::Value::from(ties));
    set.insert("PriorityFlags".to_string(), serde_json::Value::from(flags));
    set.insert(
        "PriorityLevels".to_string(),
        serde_json::Value::from(levels),
    );
    Config::default().patched(&set).expect("valid flags")
}

fn run(seed: u64, batches: usize, workers: usize, flags: &str) {
    run_with_levels(seed, batches, workers, flags, 4);
}

fn run_with_levels(seed: u64, batches: usize, workers: usize, flags: &str, levels: u32) {
    run_with_config(seed, batches, workers, config(flags, levels));
}

fn run_with_config(seed: u64, batches: usize, workers: usize, config: Config) {
    let (flags, levels) = (config.flags, config.levels);
    let mut engine = Engine::start(workers, config.clone()).expect("workers start");
    let mut oracle = Replay::new(config);
    let shape = StreamShape {
        flags: FLAGS,
        levels_changes: true,
        ..StreamShape::default()
    };
    let mut stream = Stream::new(seed, shape);
    for batch in 0..batches {
        let lines = stream.next_batch(5);
        oracle.feed_all(lines.clone());
        let report = engine.apply_batch(lines).expect("batch applies");
        let context = format!(
            "seed {seed}, batch {batch}, {workers} workers, flags {flags:?}, levels {levels}"
        );
        let lines_in_batch = report.applied + report.rejected.len() as u64;
        assert!(lines_in_batch > 0, "{context}");
        let expected = fairshare::table(oracle.state());
        let actual = engine.fairshare_table().expect("table reads");
        assert_eq!(actual, expected, "{context}");
        // `explain`'s path, read from the path's associations only.
        for row in expected.rows.iter().filter(|row| row.user.is_some()) {
            let user = row.user.as_deref().unwrap_or_default();
            assert_eq!(
                engine
                    .fairshare_path(&row.account, user)
                    .expect("path reads"),
                expected.path_to(&row.account, user),
                "{context}: path of {}/{user}",
                row.account
            );
        }
        assert_eq!(
            engine.user_factors().expect("factors read"),
            fairshare::user_factors(oracle.state()),
            "{context}"
        );
    }
}

/// A tree of 40 accounts (ten under others, one of them `parent`-shared)
/// and `users` user associations (every 97th `parent`), usage charged to
/// every 7th user at three times, pending jobs of a few: as event lines.
fn wide_cluster(users: usize) -> String {
    let t0 = 1_700_000_000;
    let mut out = String::new();
    for a in 0..40 {
        let parent = if a >= 30 {
            format!("a{}", a - 30)
        } else {
            "root".into()
        };
        let shares = if a == 35 {
            "\"parent\"".to_string()
        } else {
            (1 + a % 7).to_string()
        };
        out += &format!(
            "{{\"op\":\"account\",\"t\":{t0},\"name\":\"a{a}\",\"parent\":\"{parent}\",\"shares\":{shares}}}\n"
        );
    }
    for u in 0..users {
        let shares = if u % 97 == 0 {
            "\"parent\"".to_string()
        } else {
            (1 + u % 5).to_string()
        };
        out += &format!(
            "{{\"op\":\"user\",\"t\":{t0},\"user\":\"u{u}\",\"account\":\"a{}\",\"shares\":{shares}}}\n",
            u % 40
        );
    }
    for (step, t) in [t0 + 100, t0 + 5_000, t0 + 90_000].into_iter().enumerate() {
        for u in (step..users).step_by(7) {
            out += &format!(
                "{{\"op\":\"usage\",\"t\":{t},\"account\":\"a{}\",\"user\":\"u{u}\",\"amount\":{}}}\n",
                u % 40,
                1 + (u * 7_919) % 100_000
            );
        }
    }
    for u in (0..users).step_by(101) {
        out += &format!(
            "{{\"op\":\"submit\",\"t\":{},\"job\":\"{u}\",\"user\":\"u{u}\",\"account\":\"a{}\"}}\n",
            t0 + 90_000,
            u % 40
        );
    }
    out
}

/// Whole tables read with their rows built on every core (a tree of more
/// than `PARALLEL_ROWS_MIN` associations) equal the oracle's, and so do the
/// usage rows `audit` reads, under every algorithm; 1 and 2 workers.
#[test]
fn wide_tables_built_on_every_core_equal_the_oracle() {
    let cluster = wide_cluster(PARALLEL_ROWS_MIN + 500);
    let lines: Vec<_> = read_events(cluster.as_bytes())
        .map(Result::unwrap)
        .collect();
    for (flags, workers) in FLAGS.iter().map(|flags| (flags, 1)).chain([(&"", 2)]) {
        let config = config(flags, 4);
        let mut engine = Engine::start(workers, config.clone()).expect("workers start");
        let mut oracle = Replay::new(config);
        oracle.feed_all(lines.clone());
        let report = engine.apply_batch(lines.clone()).expect("batch applies");
        assert!(report.rejected.is_empty(), "{:?}", report.rejected.first());
        let expected = fairshare::table(oracle.state());
        assert!(
            expected.rows.len() >= PARALLEL_ROWS_MIN,
            "the rows are built in parallel"
        );
        let actual = engine.fairshare_table().expect("table reads");
        assert_eq!(actual, expected, "flags {flags:?}, {workers} workers");
        assert_eq!(
            engine.usage_rows().expect("usage rows read"),
            expected.usage_rows(),
            "flags {flags:?}, {workers} workers"
        );
    }
}

#[test]
fn tables_equal_the_oracle_one_worker() {
    for (seed, flags) in (0..6).zip(FLAGS.iter().cycle()) {
        run(seed, 50, 1, flags);
    }
}

#[test]
fn ticket_and_level_tables_equal_the_oracle() {
    for seed in 40..43 {
        run(seed, 60, 1, "TICKET_BASED");
    }
    for (seed, &levels) in (50..).zip(LEVELS) {
        run_with_levels(seed, 40, 1, "LEVEL_BASED", levels);
    }
    run(60, 40, 2, "TICKET_BASED");
    run_with_levels(61, 40, 2, "LEVEL_BASED", 3);
    run(62, 30, 4, "TICKET_BASED");
    run_with_levels(63, 30, 4, "LEVEL_BASED", 2);
}

#[test]
fn tables_equal_the_oracle_two_workers() {
    run(21, 50, 2, "");
    run(22, 50, 2, "NO_FAIR_TREE");
}

#[test]
fn tables_equal_the_oracle_four_workers() {
    run(31, 40, 4, "");
    run(32, 40, 4, "DEPTH_OBLIVIOUS");
}

/// The documented tie rule (`FairTreeTies=documented`) on 1, 2 and 4
/// workers; the default (Slurm's ties) runs above.
#[test]
fn documented_ties_equal_the_oracle() {
    for (seed, workers) in [(70, 1), (71, 2), (72, 4)] {
        run_with_config(seed, 40, workers, config_with_ties("", 4, "documented"));
    }
}

#[test]
fn heavy_sweep() {
    if !fairflow_testkit::heavy_or_skip("fairshare_equivalence::heavy_sweep") {
        return;
    }
    for seed in 1000..1006 {
        for workers in [1, 2, 4] {
            for flags in FLAGS {
                run(seed, 150, workers, flags);
            }
            for &levels in LEVELS {
                run_with_levels(seed, 150, workers, "LEVEL_BASED", levels);
            }
        }
    }
}
