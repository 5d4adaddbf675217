//! Association priorities inherited through moving accounts: an account or
//! user association without a `priority` of its own takes its nearest
//! ancestor account's (Slurm's rule), so moving an account changes its whole
//! subtree's association factor only when the inherited value changes. The
//! driver re-derives a moved subtree only then; these tests check that it
//! misses nothing: a hand-computed chain of moves, and seeded random streams
//! of moves, priority changes, removals and jobs, every job's priority
//! against the oracle's after every batch, for 1, 2 and 4 workers.

use fairflow_dataflow::Engine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod common;
use common::{lines, Stream, StreamShape};

/// Only the association factor weighs: a job's priority is
/// `1000 · (its association's effective priority) / (the largest priority
/// set)`, at least 1 (Slurm's floor).
fn config() -> Config {
    let set: std::collections::BTreeMap<String, serde_json::Value> = [
        ("PriorityWeightAssoc".to_string(), 1000.into()),
        ("PriorityDecayHalfLife".to_string(), 0.into()),
    ]
    .into();
    Config::default()
        .patched(&set)
        .expect("valid configuration")
}

/// Accounts `a` (10), `b` (10) and `c` (20); `x` (no priority of its own)
/// under `a`, with `y` (none) below it; users `u` in `y` and `v` in `x`
/// (`v` with 5 of its own). The largest priority set is 20.
const TREE: &str = r#"{"op":"account","t":100,"name":"a","shares":1,"priority":10}
{"op":"account","t":100,"name":"b","shares":1,"priority":10}
{"op":"account","t":100,"name":"c","shares":1,"priority":20}
{"op":"account","t":100,"name":"x","parent":"a","shares":1}
{"op":"account","t":100,"name":"y","parent":"x","shares":1}
{"op":"user","t":100,"user":"u","account":"y"}
{"op":"user","t":100,"user":"v","account":"x","priority":5}
{"op":"submit","t":100,"job":"1","user":"u","account":"y"}
{"op":"submit","t":100,"job":"2","user":"v","account":"x"}"#;

fn priorities(engine: &Engine) -> Vec<(String, u64)> {
    engine
        .priorities()
        .expect("priorities read")
        .into_iter()
        .map(|p| (p.job, p.priority))
        .collect()
}

fn expect(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
    pairs.iter().map(|&(job, p)| (job.to_string(), p)).collect()
}

#[test]
fn moves_change_a_subtree_only_through_its_inherited_priority() {
    // Each step: the events, then jobs 1 (u in y) and 2 (v, own 5).
    let steps: [(&str, [(&str, u64); 2]); 6] = [
        // u inherits a's 10 through y and x: 1000 · 10 / 20.
        (TREE, [("1", 500), ("2", 250)]),
        // x under b: the same 10.
        (
            r#"{"op":"account","t":101,"name":"x","parent":"b"}"#,
            [("1", 500), ("2", 250)],
        ),
        // x under c: 20 for u; v keeps its own 5.
        (
            r#"{"op":"account","t":102,"name":"x","parent":"c"}"#,
            [("1", 1000), ("2", 250)],
        ),
        // y gets 4 of its own and u takes it; x then moves to the root,
        // above y, which no longer reaches u (v keeps its own 5).
        (
            r#"{"op":"account","t":103,"name":"y","priority":4}
{"op":"account","t":103,"name":"x","parent":"root"}"#,
            [("1", 200), ("2", 250)],
        ),
        // y moves from x (now 0: no priority up its chain) to a: u keeps
        // y's own 4.
        (
            r#"{"op":"account","t":104,"name":"y","parent":"a"}"#,
            [("1", 200), ("2", 250)],
        ),
        // c's 20 goes to 8: the largest set is now 10; v's 5 gives 500,
        // u's 4 gives 400.
        (
            r#"{"op":"account","t":105,"name":"c","priority":8}"#,
            [("1", 400), ("2", 500)],
        ),
    ];
    for workers in [1, 2, 4] {
        let mut engine = Engine::start(workers, config()).expect("engine starts");
        let mut oracle = Replay::new(config());
        for (at, (events, want)) in steps.iter().enumerate() {
            let report = engine.apply_batch(lines(events)).expect("batch applies");
            assert!(
                report.rejected.is_empty(),
                "step {at}: {:?}",
                report.rejected
            );
            oracle.feed_all(lines(events));
            let context = format!("{workers} workers, step {at}");
            assert_eq!(priorities(&engine), expect(want), "{context}");
            let factors = fairshare::user_factors(oracle.state());
            assert_eq!(
                engine.priorities().expect("priorities read"),
                priority::evaluate(oracle.state(), &factors),
                "{context}: the oracle"
            );
        }
    }
}

fn run(seed: u64, batches: usize, workers: usize) {
    let mut engine = Engine::start(workers, config()).expect("engine starts");
    let mut oracle = Replay::new(config());
    // No configuration changes: each would re-derive every association's
    // priority and hide a subtree the driver missed.
    let shape = StreamShape {
        priorities: true,
        config_changes: false,
        ..StreamShape::default()
    };
    let mut stream = Stream::new(seed, shape);
    for batch in 0..batches {
        let lines = stream.next_batch(6);
        oracle.feed_all(lines.clone());
        engine.apply_batch(lines).expect("batch applies");
        let context = format!("seed {seed}, batch {batch}, {workers} workers");
        let factors = fairshare::user_factors(oracle.state());
        let listed = priority::evaluate(oracle.state(), &factors);
        assert_eq!(
            engine.priorities().expect("priorities read"),
            listed,
            "{context}"
        );
        let queue = priority::entry_queue(&listed);
        let top = engine.top(5).expect("top reads");
        assert_eq!(*top, queue[..queue.len().min(5)], "{context}: top 5");
    }
}

#[test]
fn random_moves_and_priorities_equal_the_oracle() {
    let heavy = fairflow_testkit::heavy();
    let seeds = if heavy { 0..40 } else { 0..6 };
    for seed in seeds {
        for workers in [1, 2, 4] {
            run(seed, 60, workers);
        }
    }
}
