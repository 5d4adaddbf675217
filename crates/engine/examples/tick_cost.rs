//! What a `PriorityCalcPeriod` boundary's settlement costs at scale, for
//! `perf/results/` (measured here, never asserted in tests): `cargo run
//! --release -p fairflow-engine --example tick_cost -- USER_ASSOCIATIONS
//! PENDING_JOBS [TICKS]`. Generates a cluster (`fairflow_workload`, seed 1,
//! its `PriorityCalcPeriod`), loads it into the incremental engine (1
//! worker), then settles `TICKS` (default 20) boundaries one after the other,
//! each a `tick` batch of its own as `serve`'s ticker sends it, and prints
//! each one's wall time (the tick and a top-100 read). It runs on the system
//! allocator, not the `fairflow` binary's jemalloc: compare its figures with
//! each other, and `fairflow bench`'s `calc_period_tick` with the service's.

use std::time::Instant;

use fairflow_engine::{Engine, IncrementalEngine};
use fairflow_ingest::LogLine;
use fairflow_model::event::{Event, Op};
use fairflow_model::Config;
use fairflow_workload::{Generator, WorkloadParams};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a count"))
        .collect();
    let params = WorkloadParams {
        user_associations: args.first().copied().unwrap_or(100_000),
        pending_jobs: args.get(1).copied().unwrap_or(100_000),
        // As `fairflow bench` generates it (`bench_setup::workload`).
        max_depth: 6,
        users_per_account: 8,
        running_jobs: (args.get(1).copied().unwrap_or(100_000) / 10).min(10_000),
        ..WorkloadParams::default()
    };
    let ticks = args.get(2).copied().unwrap_or(20);
    let mut generator = Generator::new(params);
    let mut engine = IncrementalEngine::start(1, Config::default()).expect("starts");
    let started = Instant::now();
    let mut line = 0u64;
    let mut first = true;
    generator.initial_events_in_chunks(10_000, &mut |mut chunk| {
        if first {
            // `PriorityCalcPeriod` as `bench` pins it (its default, 5 min).
            for event in chunk.iter_mut() {
                if let Op::Config { set } = &mut event.op {
                    set.insert("PriorityCalcPeriod".into(), "5:00".into());
                }
            }
            first = false;
        }
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
    let period = engine.config().calc_period_secs.max(1);
    println!(
        "loaded {line} events in {:.1} s; PriorityCalcPeriod {period} s",
        started.elapsed().as_secs_f64()
    );
    let mut times_ms = Vec::new();
    for _ in 0..ticks {
        let now = engine.now().expect("a time");
        let boundary = (now / period + 1) * period;
        line += 1;
        let tick = LogLine {
            line,
            event: Ok(Event {
                t: boundary,
                op: Op::Tick,
            }),
        };
        let start = Instant::now();
        engine.apply(vec![tick]).expect("applies");
        engine.top(100).expect("top");
        let ms = start.elapsed().as_secs_f64() * 1e3;
        println!("tick at {boundary}: {ms:.1} ms");
        times_ms.push(ms);
    }
    times_ms.sort_by(f64::total_cmp);
    if let (Some(first), Some(last)) = (times_ms.first(), times_ms.last()) {
        println!(
            "ticks: {} min {first:.1} ms, median {:.1} ms, max {last:.1} ms",
            times_ms.len(),
            times_ms[times_ms.len() / 2]
        );
    }
}
