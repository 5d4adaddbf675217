//! What the fair-share history costs at scale, for `perf/results/` (measured
//! here, never asserted in tests): `cargo run --release -p fairflow-service
//! --example history_cost -- USER_ASSOCIATIONS PENDING_JOBS`. Generates a
//! cluster (`fairflow_workload`, seed 1), loads it into the incremental engine
//! (1 worker), then times one step's read (`history::read_step`; its table,
//! pending counts and queue head reads alone too), one step's
//! write (`HistoryStore::append`: encode, write, sync) in a temporary
//! directory, and one association's series over the steps written; prints the
//! bytes per association per step on disk and what the store holds in memory.

use std::time::Instant;

use fairflow_engine::{Engine, IncrementalEngine};
use fairflow_ingest::LogLine;
use fairflow_model::Config;
use fairflow_service::history::{read_step, HistoryStore, DEFAULT_RANK_DEPTH};
use fairflow_workload::{Generator, WorkloadParams};

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0.0, |pages| (pages * 4096) as f64 / (1 << 20) as f64)
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a count"))
        .collect();
    let params = WorkloadParams {
        user_associations: args.first().copied().unwrap_or(100_000),
        pending_jobs: args.get(1).copied().unwrap_or(100_000),
        ..WorkloadParams::default()
    };
    let mut generator = Generator::new(params);
    let mut engine = IncrementalEngine::start(1, Config::default()).expect("starts");
    let started = Instant::now();
    let mut line = 0u64;
    generator.initial_events_in_chunks(10_000, &mut |chunk| {
        let lines = chunk
            .into_iter()
            .map(|event| {
                line += 1;
                LogLine {
                    line,
                    event: Ok(event),
                }
            })
            .collect();
        engine.apply(lines).expect("applies");
    });
    let now = engine.now().expect("a time");
    println!(
        "loaded {} events in {:.1} s: {} associations, {} pending jobs, RSS {:.0} MiB",
        line,
        started.elapsed().as_secs_f64(),
        engine.associations(),
        engine.queue_len(),
        rss_mib()
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut store = HistoryStore::open(dir.path(), 7 * 86_400).expect("opens");
    let steps = 5;
    for i in 0..steps {
        let at = now + 300 * (i + 1);
        let t = Instant::now();
        engine.advance_to(at).expect("advances");
        let advance_ms = ms(t);
        // The read itself first (the first read of the state), then its
        // parts apart.
        let t = Instant::now();
        let step = read_step(&mut engine, at, DEFAULT_RANK_DEPTH).expect("reads");
        let read_ms = ms(t);
        let t = Instant::now();
        engine.fairshare().expect("the table");
        let table_ms = ms(t);
        let t = Instant::now();
        engine.pending_jobs_by_user().expect("the counts");
        let counts_ms = ms(t);
        let t = Instant::now();
        engine
            .fairshare_with_pending()
            .expect("the table and counts");
        let joined_ms = ms(t);
        let t = Instant::now();
        engine
            .top(DEFAULT_RANK_DEPTH as usize)
            .expect("the queue's head");
        let head_ms = ms(t);
        let queue_ms = counts_ms + head_ms;
        let rss_before = rss_mib();
        let t = Instant::now();
        store.append(&step).expect("writes");
        let write_ms = ms(t);
        println!(
            "step {i}: advance {advance_ms:.1} ms, read {read_ms:.1} ms (alone: table \
             {table_ms:.1} ms, pending counts by name {counts_ms:.1} ms, the table with \
             counts by row {joined_ms:.1} ms, first {DEFAULT_RANK_DEPTH} \
             entries {head_ms:.1} ms; queue {queue_ms:.1} ms), \
             write (encode, write, sync) {write_ms:.1} ms, RSS {rss_before:.0} -> {:.0} MiB",
            rss_mib()
        );
    }
    let rows = store.associations();
    let on_disk: u64 = std::fs::read_dir(dir.path())
        .expect("lists")
        .map(|e| e.expect("an entry"))
        .filter(|e| e.file_name().to_string_lossy().starts_with("steps-"))
        .map(|e| e.metadata().expect("metadata").len())
        .sum();
    let dictionary = std::fs::metadata(dir.path().join("associations.bin"))
        .expect("the dictionary")
        .len();
    println!(
        "{rows} associations: {on_disk} bytes of steps for {steps} steps = {:.2} bytes per \
         association per step; dictionary file {dictionary} bytes",
        on_disk as f64 / (rows as f64 * steps as f64)
    );
    let (account, user) = generator.associations()[rows / 3].clone();
    let t = Instant::now();
    let series = store
        .series(&account, Some(&user), None, None)
        .expect("a series");
    println!(
        "series of ({account}, {user}): {} steps in {:.2} ms",
        series.len(),
        ms(t)
    );
}
