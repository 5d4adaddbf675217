//! The engine's fair-share table equals the oracle's (`==`, every `f64`
//! bit-exact) after every batch of seeded random streams with retractions
//! (share changes incl. `parent`, moves, removals, ends, requeues, resets,
//! half-life and calc-period changes, algorithm switches), for 1, 2 and 4
//! workers. `FAIRFLOW_HEAVY=1` runs a much larger sweep.

mod common;

use common::{Stream, StreamShape};
use fairflow_dataflow::Engine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, Replay};

const FLAGS: &[&str] = &[
    "",
    "NO_FAIR_TREE",
    "DEPTH_OBLIVIOUS",
    "NO_FAIR_TREE,MAX_TRES",
];

fn config(flags: &str) -> Config {
    let mut set = std::collections::BTreeMap::new();
    set.insert("PriorityFlags".to_string(), serde_json::Value::from(flags));
    Config::default().patched(&set).expect("valid flags")
}

fn run(seed: u64, batches: usize, workers: usize, flags: &str) {
    let mut engine = Engine::start(workers, config(flags)).expect("workers start");
    let mut oracle = Replay::new(config(flags));
    let shape = StreamShape {
        flags: FLAGS,
        ..StreamShape::default()
    };
    let mut stream = Stream::new(seed, shape);
    for batch in 0..batches {
        let lines = stream.next_batch(5);
        oracle.feed_all(lines.clone());
        let report = engine.apply_batch(lines).expect("batch applies");
        let context = format!("seed {seed}, batch {batch}, {workers} workers, flags {flags:?}");
        let lines_in_batch = report.applied + report.rejected.len() as u64;
        assert!(lines_in_batch > 0, "{context}");
        let expected = fairshare::table(&oracle.state);
        let actual = engine.fairshare_table().expect("table reads");
        assert_eq!(actual, expected, "{context}");
        assert_eq!(
            engine.user_factors().expect("factors read"),
            fairshare::user_factors(&oracle.state),
            "{context}"
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
fn tables_equal_the_oracle_two_workers() {
    run(21, 50, 2, "");
    run(22, 50, 2, "NO_FAIR_TREE");
}

#[test]
fn tables_equal_the_oracle_four_workers() {
    run(31, 40, 4, "");
    run(32, 40, 4, "DEPTH_OBLIVIOUS");
}

#[test]
fn heavy_sweep() {
    if std::env::var_os("FAIRFLOW_HEAVY").is_none() {
        return;
    }
    for seed in 1000..1030 {
        for workers in [1, 2, 4] {
            for flags in FLAGS {
                run(seed, 150, workers, flags);
            }
        }
    }
}
