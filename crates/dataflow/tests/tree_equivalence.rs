//! After every batch of a seeded random stream, the engine's tree (read from
//! the dataflow's result arrangement) equals the oracle's `Tree::build`: the
//! same nodes in the same order, parents, fair-share parents, level shares,
//! and every subtree's usage in exact frame units.

mod common;

use common::{Stream, StreamShape};
use fairflow_dataflow::{Engine, EngineTree};
use fairflow_model::Config;
use fairflow_oracle::tree::Tree;
use fairflow_oracle::Replay;

fn assert_same_tree(engine: &EngineTree, oracle: &Tree, context: &str) {
    assert_eq!(engine.as_of, oracle.as_of, "{context}: as_of");
    assert_eq!(engine.frame, oracle.frame, "{context}: frame");
    let engine_names: Vec<_> = engine.nodes.iter().map(|n| (n.account, n.user)).collect();
    let oracle_names: Vec<_> = (oracle.nodes.iter())
        .map(|n| (n.account.as_str(), n.user.as_deref()))
        .collect();
    assert_eq!(engine_names, oracle_names, "{context}: nodes in tree order");
    for (e, o) in engine.nodes.iter().zip(oracle.nodes.iter()) {
        let who = format!("{context}: {}/{:?}", o.account, o.user);
        assert_eq!(e.depth, o.depth, "{who}: depth");
        assert_eq!(e.parent, o.parent, "{who}: parent");
        assert_eq!(e.fs_parent, o.fs_parent, "{who}: fs_parent");
        assert_eq!(e.shares, o.shares, "{who}: shares");
        assert_eq!(e.level_shares, o.level_shares, "{who}: level_shares");
        assert_eq!(e.usage, o.usage, "{who}: usage");
    }
}

fn run(seed: u64, batches: usize, workers: usize) {
    let mut engine = Engine::start(workers, Config::default()).expect("workers start");
    let mut oracle = Replay::new(Config::default());
    let mut stream = Stream::new(seed, StreamShape::default());
    let (mut most_nodes, mut batches_with_usage) = (0, 0);
    for batch in 0..batches {
        let lines = stream.next_batch(6);
        oracle.feed_all(lines.clone());
        engine.apply_batch(lines).expect("batch applies");
        let context = format!("seed {seed}, batch {batch}, {workers} workers");
        let tree = engine.tree().expect("tree reads");
        assert_same_tree(&tree, &Tree::build(oracle.state()), &context);
        most_nodes = most_nodes.max(tree.nodes.len());
        batches_with_usage += usize::from(tree.nodes[0].usage > 0);
    }
    // The stream is not trivial: a real tree, usage most of the time.
    assert!(oracle.report.applied > batches as u64, "most events apply");
    assert!(most_nodes >= 8, "seed {seed}: at most {most_nodes} nodes");
    assert!(
        batches_with_usage > batches / 4,
        "seed {seed}: usage in {batches_with_usage} batches"
    );
}

#[test]
fn subtree_usage_equals_the_oracle_one_worker() {
    for seed in 0..4 {
        run(seed, 60, 1);
    }
}

#[test]
fn subtree_usage_equals_the_oracle_two_workers() {
    run(11, 60, 2);
}

#[test]
fn heavy_sweep() {
    if !fairflow_testkit::heavy_or_skip("tree_equivalence::heavy_sweep") {
        return;
    }
    for seed in 100..140 {
        for workers in [1, 2, 4] {
            run(seed, 200, workers);
        }
    }
}
