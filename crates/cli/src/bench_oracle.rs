//! `fairflow bench`'s oracle phase: the batch oracle (`BatchEngine`) fed
//! the same seed and the same stream of steps as the engine. For the first
//! `--oracle-samples` batches of each update kind it times the apply plus a
//! full recomputation; at each checked read it answers the read with the
//! function the engine's answer came from (`bench_service_reads::answer`),
//! once per state; at the end it times the full recomputation of a read,
//! the lean recomputation and Slurm's cycle (`bench_baselines`), and
//! compares its top `k` where the top-k reads ended with the engine's.

use std::hint::black_box;
use std::time::Instant;

use anyhow::bail;
use fairflow_engine::BatchEngine;
use fairflow_engine::Engine;
use fairflow_model::report::JobPriority;
use fairflow_model::Config;
use fairflow_oracle::State;
use fairflow_workload::WorkloadParams;

use crate::bench_args::{progress, Args};
use crate::bench_baselines;
use crate::bench_engine::EnginePhase;
use crate::bench_service_reads::oracle_digest;
use crate::bench_setup::{generate_initial, Lines, Step};
use crate::measure::{self, duration_us};

/// The oracle phase's results.
pub(crate) struct OraclePhase {
    /// Full recomputation of a read without an update, microseconds.
    pub(crate) read_recompute_us: Vec<f64>,
    /// The oracle's top `k` where the engine's top-k reads ended.
    pub(crate) topk_end: Vec<String>,
    pub(crate) peak_rss_bytes: Option<u64>,
    pub(crate) peak_was_reset: bool,
    /// Live bytes of the oracle's book after the load.
    pub(crate) book_bytes: Option<u64>,
    /// The oracle's answer's digest of each checked read (by check id).
    pub(crate) digests: Vec<Option<u64>>,
    /// The lean full recomputation, microseconds per pass.
    pub(crate) lean_recompute_us: Vec<f64>,
    /// The lean pass's top `k` equals the oracle's.
    pub(crate) lean_matches_oracle: bool,
    /// Pending jobs and associations at the end (Slurm's cycle's size).
    pub(crate) pending_jobs: u64,
    pub(crate) associations: u64,
}

/// What the engine maintains, recomputed from scratch by the oracle: the
/// fair-share table and factors, every listed job's priority, and the
/// ranked queue's top `k`.
fn full_recompute(state: &State, k: usize) -> Vec<JobPriority> {
    let fairshare = fairflow_oracle::fairshare::compute(state);
    black_box(&fairshare.rows);
    let all = fairflow_oracle::priority::evaluate(state, &fairshare.user_factors);
    let mut queue = fairflow_oracle::priority::entry_queue(&all);
    queue.truncate(k);
    queue
}

/// What the replay of the steps answered: each checked read's digest (by
/// check id) and the top `k` where the top-k reads ended.
struct Replayed {
    digests: Vec<Option<u64>>,
    topk_end: Vec<String>,
}

/// Replay the engine's steps into `oracle`, timing the first batches of
/// each kind and answering each checked read.
fn replay_steps(
    args: &Args,
    oracle: &mut Box<dyn Engine>,
    lines: &mut Lines,
    engine: &mut EnginePhase,
) -> anyhow::Result<Replayed> {
    let mut digests = vec![None; engine.checks.len()];
    let mut topk_end = Vec::new();
    let mut timed = vec![0usize; engine.measured.len()];
    for step in std::mem::take(&mut engine.steps) {
        let (kind, events) = match step {
            Step::Batch(kind, events) => (Some(kind), events),
            Step::Apply(events) => (None, events),
            Step::Check(check) => {
                progress(args, &format!("oracle: reads.{}", check.kind.key()));
                let taken =
                    std::mem::replace(oracle, Box::new(BatchEngine::new(Config::default())));
                let (back, found) = oracle_digest(taken, &check.read, args.k);
                *oracle = back;
                digests[check.id] = Some(found?);
                continue;
            }
            Step::TopkEnd => {
                let top = full_recompute(oracle.book().state(), args.k);
                topk_end = top.into_iter().map(|p| p.job).collect();
                continue;
            }
        };
        let batch = lines.of(events);
        let index = kind.map(|kind| kind.index());
        let rejected = match index.filter(|&i| timed[i] < args.oracle_samples) {
            Some(index) => {
                timed[index] += 1;
                let key = engine.measured[index].kind.key();
                progress(args, &format!("oracle: {key} full recomputation"));
                let started = Instant::now();
                let rejected = oracle.apply(batch)?;
                let applied = started.elapsed();
                black_box(full_recompute(oracle.book().state(), args.k));
                let measured = &mut engine.measured[index];
                let full = duration_us(started.elapsed());
                measured.full_recompute_us.push(full);
                measured.oracle_apply_us.push(duration_us(applied));
                rejected
            }
            None => oracle.apply(batch)?,
        };
        if let Some(rejection) = rejected.first() {
            let what = kind.map_or("read's state change", |kind| kind.key());
            bail!("the oracle rejected a {what} event: {rejection}");
        }
    }
    Ok(Replayed { digests, topk_end })
}

/// Run the oracle phase over the engine phase's steps.
pub(crate) fn oracle_phase(
    args: &Args,
    params: &WorkloadParams,
    engine: &mut EnginePhase,
) -> anyhow::Result<OraclePhase> {
    let peak_was_reset = measure::reset_peak_rss();
    progress(args, "oracle: replaying the same state");
    let allocated_before = measure::allocated_bytes();
    let mut oracle: Box<dyn Engine> = Box::new(BatchEngine::new(Config::default()));
    let mut lines = Lines::default();
    generate_initial(
        params,
        args.algorithm,
        args.calc_period_secs,
        args.load_batch,
        |chunk| match oracle.apply(lines.of(chunk))?.first() {
            Some(rejection) => bail!("the oracle rejected the initial state: {rejection}"),
            None => Ok(()),
        },
    )?;
    // The book alone, as the batch engine holds it after the same load.
    let book_bytes = measure::allocated_bytes()
        .zip(allocated_before)
        .map(|(after, before)| after.saturating_sub(before));
    let replayed = replay_steps(args, &mut oracle, &mut lines, engine)?;
    let k = args.k;
    let state = oracle.book().state();
    let mut read_recompute_us = Vec::new();
    let mut top = Vec::new();
    for _ in 0..args.oracle_samples.max(1) {
        let started = Instant::now();
        let queue = full_recompute(state, k);
        read_recompute_us.push(duration_us(started.elapsed()));
        top = queue.into_iter().map(|p| p.job).collect();
    }
    progress(args, "baselines: lean full recomputation");
    let factors = fairflow_oracle::fairshare::user_factors(state);
    let priorities = fairflow_oracle::priority::evaluate(state, &factors);
    let rows = bench_baselines::prepare(state, &priorities, &factors);
    drop(priorities);
    let mut lean_recompute_us = Vec::new();
    let mut lean_matches_oracle = true;
    for _ in 0..args.oracle_samples.max(1) {
        let (elapsed, lean_top) = bench_baselines::lean_pass(&rows, k);
        lean_recompute_us.push(duration_us(elapsed));
        lean_matches_oracle &= lean_top == top;
    }
    Ok(OraclePhase {
        read_recompute_us,
        topk_end: replayed.topk_end,
        peak_rss_bytes: measure::peak_rss_bytes(),
        peak_was_reset,
        book_bytes,
        digests: replayed.digests,
        lean_recompute_us,
        lean_matches_oracle,
        pending_jobs: oracle.queue_len(),
        associations: oracle.associations(),
    })
}
