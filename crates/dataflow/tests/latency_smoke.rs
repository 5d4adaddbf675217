//! A timing smoke test, not a benchmark (that is `fairflow bench`): builds a
//! tree of `FAIRFLOW_SMOKE_USERS` user associations (default 2,000; 20 per
//! account, 10 accounts per parent account) and prints the median time of a
//! one-usage-event batch, of a 1,000-usage-event batch and of reading the
//! Fair Tree table. A measurement, not a test of speed: `#[ignore]`d, run by
//! hand (`cargo test --release -p fairflow-dataflow --test latency_smoke --
//! --ignored --nocapture`); asserts nothing about time, only that the engine
//! agrees with itself on the table size.

use std::time::Instant;

use fairflow_dataflow::Engine;
use fairflow_ingest::{parse_event, LogLine};
use fairflow_model::Config;

fn line(n: u64, text: String) -> LogLine {
    LogLine {
        line: n,
        event: parse_event(n, &text),
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[test]
#[ignore = "a measurement, not a test of speed: run by hand"]
fn latency_smoke() {
    let users: u64 = std::env::var("FAIRFLOW_SMOKE_USERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let workers: usize = std::env::var("FAIRFLOW_SMOKE_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let accounts = users.div_ceil(20);
    let mut engine = Engine::start(workers, Config::default()).unwrap();
    let t = 1_700_000_000;
    let mut n = 0;
    let mut next = |text: String| {
        n += 1;
        line(n, text)
    };
    let mut load = Vec::new();
    for a in 0..accounts {
        let parent = if a < 10 {
            "root".to_string()
        } else {
            format!("a{}", a / 10 - 1)
        };
        load.push(next(format!(
            r#"{{"op":"account","t":{t},"name":"a{a}","parent":"{parent}","shares":{}}}"#,
            1 + a % 7
        )));
    }
    for u in 0..users {
        let a = u % accounts;
        load.push(next(format!(
            r#"{{"op":"user","t":{t},"user":"u{u}","account":"a{a}","shares":{}}}"#,
            1 + u % 5
        )));
        load.push(next(format!(
            r#"{{"op":"usage","t":{t},"account":"a{a}","user":"u{u}","amount":{}}}"#,
            1 + (u * 7919) % 100_000
        )));
    }
    let started = Instant::now();
    engine.apply_batch(load).unwrap();
    let load_secs = started.elapsed().as_secs_f64();

    let mut single = Vec::new();
    let mut records = Vec::new();
    let touched_before = engine.touched_records();
    for round in 0..200u64 {
        let u = (round * 104_729) % users;
        let batch = vec![next(format!(
            r#"{{"op":"usage","t":{},"account":"a{}","user":"u{u}","amount":{}}}"#,
            t + round as i64,
            u % accounts,
            1 + round
        ))];
        let started = Instant::now();
        let report = engine.apply_batch(batch).unwrap();
        single.push(started.elapsed().as_secs_f64() * 1e6);
        records.push(report.input_records);
    }
    let mut empty = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        engine.apply_batch(Vec::new()).unwrap();
        empty.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let touched_single = (engine.touched_records() - touched_before) / single.len() as u64;
    let mut thousand = Vec::new();
    for round in 0..10u64 {
        let batch = (0..1000u64)
            .map(|i| {
                let u = (round * 1000 + i) * 7 % users;
                next(format!(
                    r#"{{"op":"usage","t":{},"account":"a{}","user":"u{u}","amount":{}}}"#,
                    t + 1000 + round as i64,
                    u % accounts,
                    1 + i
                ))
            })
            .collect();
        let started = Instant::now();
        engine.apply_batch(batch).unwrap();
        thousand.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let mut reads = Vec::new();
    let mut rows = 0;
    for _ in 0..10 {
        let started = Instant::now();
        rows = engine.fairshare_table().unwrap().rows.len();
        reads.push(started.elapsed().as_secs_f64() * 1e6);
    }
    assert_eq!(rows as u64, 1 + accounts + users);
    println!(
        "users {users}, accounts {accounts}, workers {workers}: load {load_secs:.2} s; \
         1-usage batch p50 {:.0} us ({} input records, {touched_single} touched on average); \
         empty batch p50 {:.0} us; 1000-usage batch p50 {:.0} us; \
         table read p50 {:.0} us",
        median(single),
        records[0],
        median(empty),
        median(thousand),
        median(reads)
    );
}
