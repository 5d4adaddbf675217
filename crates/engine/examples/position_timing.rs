//! Times `Engine::position` and `Engine::top_page` on a log, for
//! `perf/results/` (performance is measured here, never asserted in tests):
//! `cargo run --release -p fairflow-engine --example position_timing -- LOG
//! WORKERS [batch]`. Loads the log into the incremental engine (and the
//! batch oracle when `batch` is given), then reads the place of the jobs at
//! ranks 1, 100, 10,000, the middle and the last, three times each, and a
//! page of 20 jobs at the middle; prints each read's median wall time.

use std::time::Instant;

use fairflow_engine::{BatchEngine, Engine, IncrementalEngine};
use fairflow_ingest::reader::read_events;
use fairflow_model::report::Selection;
use fairflow_model::Config;

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096 / (1 << 20))
}

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[1]
}

fn measure(name: &str, engine: &mut dyn Engine) {
    let start = Instant::now();
    let queue = engine.top(usize::MAX).expect("top");
    println!(
        "{name}: top ALL ({} jobs) {:.1} ms, RSS {} MiB",
        queue.len(),
        start.elapsed().as_secs_f64() * 1e3,
        rss_mib()
    );
    let n = queue.len();
    let mut ranks = vec![1, 100, 10_000, n / 2, n];
    ranks.retain(|r| *r >= 1 && *r <= n);
    ranks.dedup();
    for rank in ranks {
        let job = queue[rank - 1].job.clone();
        let mut got = 0;
        let ms = median_ms(|| got = engine.position(&job).expect("a place").rank);
        assert_eq!(got, rank as u64);
        println!("{name}: position of the job at rank {rank}: {ms:.2} ms");
    }
    let all = Selection::default();
    let ms = median_ms(|| {
        engine.top_page(n / 2, 20, &all).expect("page");
    });
    println!("{name}: top_page(offset {}, k 20): {ms:.2} ms", n / 2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log = args
        .get(1)
        .expect("usage: position_timing LOG WORKERS [batch]");
    let workers: usize = args.get(2).map_or(1, |w| w.parse().expect("workers"));
    let text = std::fs::read_to_string(log).expect("the log");
    let lines = || {
        read_events(text.as_bytes())
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    };
    let start = Instant::now();
    let mut incremental = IncrementalEngine::start(workers, Config::default()).expect("starts");
    incremental.apply(lines()).expect("applies");
    println!(
        "incremental ({workers} workers): loaded in {:.1} s, RSS {} MiB",
        start.elapsed().as_secs_f64(),
        rss_mib()
    );
    measure("incremental", &mut incremental);
    if args.get(3).is_some_and(|a| a == "batch") {
        drop(incremental);
        let mut batch = BatchEngine::new(Config::default());
        batch.apply(lines()).expect("applies");
        measure("batch", &mut batch);
    }
}
