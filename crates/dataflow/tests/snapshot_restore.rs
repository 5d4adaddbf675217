//! `Engine::snapshot` and `Engine::restore`: an engine restored from a
//! snapshot taken at a random batch of a seeded random stream, fed the rest
//! of the stream beside the engine that took it, must answer exactly as that
//! engine and as the oracle after every batch (fair-share table, every
//! priority, top k), for 1 and 2 workers on either side, with the tree
//! stream of `common` (moves, removals, resets, half-life changes) and the
//! priority streams of `priority_stream` (Slurm with and without
//! `INCR_ONLY`, classic, Flux, Moab). Restoring into an engine that already
//! holds another state replaces it; a foreign, damaged or truncated snapshot
//! is an error that changes nothing.

use fairflow_book::snapshot::{SnapshotError, MAGIC};
use fairflow_dataflow::{Engine, EngineError};
use fairflow_ingest::reader::read_events;
use fairflow_ingest::LogLine;
use fairflow_model::Config;
use fairflow_oracle::{fairshare, priority, Replay};

mod common;
mod priority_stream;

/// Everything both engines and the oracle must agree on, as of now.
fn check(context: &str, engines: [&Engine; 2], oracle: &Replay) {
    let table = fairshare::table(oracle.state());
    let factors = fairshare::user_factors(oracle.state());
    let all = priority::evaluate(oracle.state(), &factors);
    let queue = priority::entry_queue(&all);
    for (which, engine) in ["original", "restored"].into_iter().zip(engines) {
        let context = format!("{context}, {which} engine");
        assert_eq!(
            engine.applied(),
            oracle.report.applied,
            "{context}: applied"
        );
        assert_eq!(
            engine.fairshare_table().expect("table reads"),
            table,
            "{context}: sshare"
        );
        assert_eq!(
            engine.priorities().expect("priorities read"),
            all,
            "{context}: priorities"
        );
        for k in [1, 5, queue.len().max(1)] {
            assert_eq!(
                engine.top(k).expect("top reads"),
                queue[..k.min(queue.len())],
                "{context}: top {k}"
            );
        }
    }
}

/// A stream cut in batches of log lines; `oracle` is the oracle fed so far
/// (the priority streams choose events against its state).
trait Batches {
    fn next(&mut self, oracle: &Replay) -> Vec<LogLine>;
}

struct TreeStream(common::Stream);

impl Batches for TreeStream {
    fn next(&mut self, _: &Replay) -> Vec<LogLine> {
        self.0.next_batch(6)
    }
}

struct PriorityStream {
    rng: priority_stream::Rng,
    config: &'static str,
    changes: &'static [&'static str],
    round: usize,
    t: i64,
    next_id: u64,
}

impl PriorityStream {
    fn new(seed: u64, config: &'static str, changes: &'static [&'static str]) -> Self {
        PriorityStream {
            rng: priority_stream::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            config,
            changes,
            round: 0,
            t: priority_stream::T0,
            next_id: 0,
        }
    }
}

impl Batches for PriorityStream {
    fn next(&mut self, oracle: &Replay) -> Vec<LogLine> {
        self.round += 1;
        if self.round == 1 {
            return lines(&priority_stream::setup(self.config));
        }
        self.t += match self.rng.below(10) {
            0 => 5000,
            1 => 0,
            _ => self.rng.below(900) as i64,
        };
        lines(&priority_stream::batch(
            &mut self.rng,
            oracle.state(),
            self.t,
            &mut self.next_id,
            self.changes,
        ))
    }
}

fn lines(text: &[String]) -> Vec<LogLine> {
    let joined = text.join("\n") + "\n";
    read_events(joined.as_bytes()).map(Result::unwrap).collect()
}

/// Feed `batches` batches to an engine on `workers_before` workers and the
/// oracle; snapshot after batch `cut`, restore into a fresh engine on
/// `workers_after` workers, feed the rest to both, check after every batch.
fn run(
    name: &str,
    mut stream: impl Batches,
    config: Config,
    batches: usize,
    cut: usize,
    workers: (usize, usize),
) {
    let mut original = Engine::start(workers.0, config.clone()).expect("workers start");
    let mut oracle = Replay::new(config);
    let mut restored: Option<Engine> = None;
    for round in 0..batches {
        let batch = stream.next(&oracle);
        oracle.feed_all(batch.clone());
        original.apply_batch(batch.clone()).expect("batch applies");
        let context = format!("{name}, round {round} (cut after {cut}), workers {workers:?}");
        if let Some(restored) = restored.as_mut() {
            restored.apply_batch(batch).expect("batch applies");
            check(&context, [&original, restored], &oracle);
        }
        if round == cut {
            let snapshot = original.snapshot().expect("snapshot");
            // Another configuration than the snapshot's: the restore replaces it.
            let mut fresh = Engine::start(workers.1, Config::default()).expect("workers start");
            fresh.restore(&snapshot).expect("restore");
            check(&context, [&original, &fresh], &oracle);
            // The restored engine's snapshot is the same bytes: nothing lost.
            assert_eq!(fresh.snapshot().expect("snapshot"), snapshot, "{context}");
            // The batch engine's view of it is the oracle after the same events.
            let replay = Replay::restore(&snapshot).expect("the oracle reads it");
            assert_eq!(replay.state(), oracle.state(), "{context}: oracle_replay");
            assert_eq!(replay.report.applied, oracle.report.applied, "{context}");
            restored = Some(fresh);
        }
    }
    assert!(
        restored.is_some(),
        "{name}: the cut {cut} is inside the stream"
    );
}

/// A cut in `1..batches - 1` and a worker pair, from the seed.
fn cut_and_workers(seed: u64, batches: usize) -> (usize, (usize, usize)) {
    let mut rng = common::Rng::new(seed ^ 0x5A5A);
    let cut = 1 + rng.below(batches as u64 - 2) as usize;
    let workers = [(1, 1), (1, 2), (2, 1), (2, 2)][rng.below(4) as usize];
    (cut, workers)
}

fn flags_config(flags: &str) -> Config {
    let mut set = std::collections::BTreeMap::new();
    set.insert("PriorityFlags".to_string(), serde_json::Value::from(flags));
    Config::default().patched(&set).expect("valid flags")
}

#[test]
fn restored_tree_streams_answer_as_the_original_and_the_oracle() {
    const FLAGS: &[&str] = &["", "NO_FAIR_TREE", "DEPTH_OBLIVIOUS"];
    for seed in 0..6u64 {
        let flags = FLAGS[seed as usize % FLAGS.len()];
        let shape = common::StreamShape {
            flags: FLAGS,
            ..common::StreamShape::default()
        };
        let batches = 24;
        let (cut, workers) = cut_and_workers(seed, batches);
        run(
            &format!("tree stream seed {seed} flags {flags:?}"),
            TreeStream(common::Stream::new(seed, shape)),
            flags_config(flags),
            batches,
            cut,
            workers,
        );
    }
}

const SCENARIOS: &[(&str, &str, &[&str])] = &[
    (
        "slurm",
        r#"{"PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightAssoc":500,"PriorityWeightFairshare":10000,"PriorityWeightJobSize":200,"PriorityWeightPartition":300,"PriorityWeightQOS":400,"PriorityWeightTRES":"CPU=10,GRES/gpu=50"}"#,
        &[
            r#"{"PriorityWeightAge":3000}"#,
            r#"{"PriorityMaxAge":"0:20:00"}"#,
            r#"{"PriorityFlags":"CALCULATE_RUNNING,NO_NORMAL_QOS"}"#,
            r#"{"PriorityFlags":""}"#,
        ],
    ),
    (
        "slurm-incr-only",
        r#"{"PriorityFlags":"INCR_ONLY,CALCULATE_RUNNING,ACCRUE_ALWAYS","PriorityWeightAge":1000,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":10000,"PriorityWeightQOS":400}"#,
        &[
            r#"{"PriorityWeightFairshare":20000}"#,
            r#"{"PriorityFlags":"INCR_ONLY"}"#,
        ],
    ),
    (
        "slurm-classic",
        r#"{"PriorityFlags":"NO_FAIR_TREE","PriorityWeightAge":100,"PriorityMaxAge":"1:00:00","PriorityWeightFairshare":100000,"PriorityWeightQOS":400}"#,
        &[r#"{"PriorityFlags":"NO_FAIR_TREE,DEPTH_OBLIVIOUS"}"#],
    ),
    (
        "flux",
        r#"{"PriorityModel":"flux","FluxWeightWaitTime":5000,"FluxMaxWaitTime":"1:00:00","FluxWeightBank":10,"FluxWeightQOS":300,"FluxWeightJobSize":100,"FluxWeightUser":2000}"#,
        &[r#"{"FluxWeightWaitTime":-2000}"#],
    ),
    (
        "moab",
        r#"{"PriorityModel":"moab","PriorityDecayHalfLife":"1:00:00","CREDWEIGHT":2,"USERWEIGHT":1,"QOSWEIGHT":3,"FSUSERWEIGHT":10,"FSGROUPWEIGHT":1,"GROUPCFG[a]":"FSTARGET=40-","FSJPUWEIGHT":3,"WCACCURACYWEIGHT":100,"PROCWEIGHT":2,"XFACTORWEIGHT":100,"USAGEEXECUTIONTIMEWEIGHT":1}"#,
        &[r#"{"QUEUETIMECAP":60}"#],
    ),
];

#[test]
fn restored_priority_streams_answer_as_the_original_and_the_oracle() {
    for (index, (name, config, changes)) in SCENARIOS.iter().enumerate() {
        for seed in [1u64, 2] {
            let batches = 20;
            let (cut, workers) = cut_and_workers(seed * 31 + index as u64, batches);
            run(
                &format!("{name} seed {seed}"),
                PriorityStream::new(seed, config, changes),
                Config::default(),
                batches,
                cut,
                workers,
            );
        }
    }
}

/// An engine fed a stream up to `batches` batches, with the oracle beside it.
fn fed(seed: u64, batches: usize, workers: usize) -> (Engine, Replay) {
    let (_, config, changes) = SCENARIOS[0];
    let mut stream = PriorityStream::new(seed, config, changes);
    let mut engine = Engine::start(workers, Config::default()).expect("workers start");
    let mut oracle = Replay::new(Config::default());
    for _ in 0..batches {
        let batch = stream.next(&oracle);
        oracle.feed_all(batch.clone());
        engine.apply_batch(batch).expect("batch applies");
    }
    (engine, oracle)
}

#[test]
fn a_restore_replaces_the_state_of_a_used_engine() {
    let (source, oracle) = fed(7, 12, 1);
    let snapshot = source.snapshot().expect("snapshot");
    // An engine holding another state takes it over: the same associations
    // created in another order (so other node ids carry the same names),
    // then another tree, other jobs and other usage.
    let mut target = Engine::start(2, Config::default()).expect("workers start");
    let mut reordered: Vec<String> = priority_stream::setup(SCENARIOS[0].1);
    reordered[9..].reverse();
    target
        .apply_batch(lines(&reordered))
        .expect("batch applies");
    let mut other = common::Stream::new(8, common::StreamShape::default());
    for _ in 0..15 {
        target
            .apply_batch(other.next_batch(6))
            .expect("batch applies");
    }
    target.restore(&snapshot).expect("restore");
    check("restore into a used engine", [&source, &target], &oracle);
    // And back to an empty cluster: everything of the old state is retracted.
    let empty = Engine::start(1, Config::default())
        .expect("workers start")
        .snapshot()
        .expect("snapshot");
    target.restore(&empty).expect("restore");
    check(
        "restore of an empty engine",
        [
            &target,
            &Engine::start(1, Config::default()).expect("workers start"),
        ],
        &Replay::new(Config::default()),
    );
}

#[test]
fn foreign_or_damaged_snapshots_are_errors_that_change_nothing() {
    let (mut engine, oracle) = fed(3, 8, 1);
    let snapshot = engine.snapshot().expect("snapshot");
    let mut bad_version = snapshot.clone();
    bad_version[MAGIC.len()] ^= 0x7F;
    let mut flipped = snapshot.clone();
    let middle = snapshot.len() / 2;
    flipped[middle] ^= 0x01;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("JSON", b"{\"not\":\"a snapshot\"}".to_vec()),
        ("only the magic", MAGIC.to_vec()),
        ("another version", bad_version),
        ("one bit flipped", flipped),
        ("truncated", snapshot[..snapshot.len() - 3].to_vec()),
        ("one byte more", [snapshot.as_slice(), &[0]].concat()),
    ];
    for (what, bytes) in cases {
        let error = engine.restore(&bytes).expect_err(what);
        let EngineError::Snapshot(error) = error else {
            panic!("{what}: not a snapshot error: {error}");
        };
        match what {
            "empty" | "JSON" => {
                assert_eq!(error, SnapshotError::Foreign, "{what}")
            }
            "another version" => assert!(matches!(error, SnapshotError::Version { .. })),
            _ => assert!(
                matches!(error, SnapshotError::Corrupt(_)),
                "{what}: {error}"
            ),
        }
        assert!(Replay::restore(&bytes).is_err(), "{what}");
        // Nothing changed.
        check(what, [&engine, &engine], &oracle);
    }
    assert_eq!(engine.snapshot().expect("snapshot"), snapshot);
}
