//! `fairflow bench`: the incremental engine at cluster scale, measured.
//!
//! 1. **State.** The workload generator (`fairflow_workload::Generator`,
//!    seeded) makes `--associations` user associations in an account tree of
//!    depth up to 6 with skewed fan-out, `--jobs` pending jobs, a tenth as
//!    many running jobs (at most 10,000 unless `--running-jobs`) and a usage
//!    history, under Slurm's default Fair Tree
//!    and the multifactor model with non-zero age, fair-share, job size,
//!    partition and QOS weights, and `PriorityCalcPeriod` of `--calc-period`
//!    seconds (300, Slurm's default): running jobs' usage is settled at period
//!    boundaries, not re-sent with every batch; `--calc-period 0` is
//!    continuous accrual, where every event that moves time charges them.
//! 2. **Load.** The events are generated and fed to the engine
//!    (`fairflow_dataflow::Engine`) in chunks of `--load-batch` events, one
//!    batch each, never held whole. `load_secs` is the engine's time (every
//!    `apply_batch` plus the first `top(k)`), generation excluded
//!    (`load_wall_secs` includes it).
//! 3. **Updates.** Each sample moves the clock 3 s forward, draws the update
//!    from the generator (so it is valid; a rejected event fails the bench),
//!    hands it to the engine as one batch and reads the top `k`: the latency
//!    is `apply_batch` plus `top(k)`. `start_end`: each sample starts a
//!    pending job (one batch) and 3 s later ends that job (a second batch);
//!    both batches are recorded, so the histogram has two entries per sample
//!    and each entry is one event's latency. `reorg_10000` moves
//!    `min(10 000, accounts)` randomly drawn accounts (every user association
//!    below them moves with them) to new parents in one batch.
//!    When a sample's clock crosses a `PriorityCalcPeriod` boundary, the
//!    boundary is first settled in a `tick` batch of its own, timed apart
//!    as `calc_period_tick` (what `serve`'s ticker does on the wall clock, by
//!    default); `--no-calc-period-ticks` leaves the settlement to the
//!    crossing event's batch instead (`serve --no-calc-period-ticks`).
//!    `--kinds` samples only some kinds.
//!    `touched_records_mean` is the batch's input records plus the records
//!    the dataflow stages emitted (`Engine::touched_records`).
//! 4. **Top-k reads** (`bench_reads`): `topk_read` times reads that compute,
//!    right after time moved without events and right after a fact changed;
//!    `topk_read_cached` times a read repeated with nothing in between (the
//!    engine's kept answer).
//! 5. **Served reads** (`bench_service_reads`, `bench_restart`): the
//!    `reads` object times position, paging, what-if, explain, audit,
//!    `sshare -a -l`, `/metrics` with every association (each through the
//!    service's `EngineBackend` and renderers, after a state change nothing
//!    was computed for), a restart from a service data directory and a
//!    one-off `top --events` of the generated log; `--reads` picks some.
//! 6. **Peak memory**: `VmHWM` after the updates and top-k reads
//!    (`peak_rss_bytes`) and after the served reads (`reads_peak_rss_bytes`);
//!    the engine is then dropped. `load_peak_rss_bytes` and
//!    `rss_after_load_bytes` are `VmHWM` and `VmRSS` right after the load;
//!    `allocated_after_load_bytes` is the live data then (jemalloc's
//!    `stats.allocated`: without the pages the allocator keeps and its
//!    fragmentation), and both are also given per active job;
//!    `book_bytes_after_load` is the live data of the oracle's book after
//!    the same load (what the batch engine holds), for comparison.
//! 7. **Full recomputation** (`bench_oracle`). The batch oracle is built
//!    from the same seed and fed the same steps in the same order; for the
//!    first `--oracle-samples` batches of each kind, `full_recompute_us`
//!    times applying the batch plus recomputing from scratch what the
//!    engine maintains: the fair-share table and factors over the whole
//!    tree, every listed job's priority, and the ranked queue's top `k`
//!    (median of the samples; `oracle_apply_us` is the apply part alone).
//!    `ratio` is `full_recompute_us / p50_us`. The first
//!    `--oracle-samples` states of each served read are answered by the
//!    oracle too (`reads.*.matches_oracle`). The peak is reset before this
//!    phase where Linux allows it, and the oracle phase's own peak is
//!    `oracle_peak_rss_bytes`. Finally the oracle's top `k` is compared
//!    with the engine's last one (`topk_matches_oracle`), and the fair
//!    baselines are taken on the last state (`bench_baselines`: a lean
//!    recomputation and Slurm's cycle, `baselines`).

use std::time::Duration;

use anyhow::Context;

use crate::bench_engine::{engine_phase, read_kinds, EnginePhase};
use crate::bench_oracle::oracle_phase;
use crate::bench_output::{report, table};
use crate::bench_restart::{self, Scratch};
use crate::bench_service_reads::{digest, ReadKind, ReadMeasured};
use crate::bench_setup::{workload, BenchAlgorithm, Kind};
use crate::measure::Latency;
use crate::output::emit;

/// `fairflow bench` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// User associations in the generated tree.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) associations: usize,
    /// Pending jobs in the generated state.
    #[arg(long, value_name = "M", default_value_t = 100_000)]
    pub(crate) jobs: usize,
    /// User associations per account on average in the generated tree:
    /// the size of the sibling groups most usage events land in (a site
    /// with big flat accounts has thousands).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub(crate) users_per_account: usize,
    /// Running jobs in the generated state (default: a tenth of `--jobs`, at
    /// most 10,000, about what the generated 64,000 CPUs hold).
    #[arg(long, value_name = "N")]
    pub(crate) running_jobs: Option<usize>,
    /// Give the generated partitions Slurm `PriorityTier`s (debug 2, batch
    /// and gpu 1) and submit one `batch` job in 20 to `batch,debug`: a
    /// scheduler's queue of entries in two tiers (issue 35 item 5).
    #[arg(long)]
    pub(crate) tiered_partitions: bool,
    /// Timely workers.
    #[arg(long, value_name = "W", default_value_t = 1)]
    pub(crate) workers: usize,
    /// Seed of the workload generator.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
    /// How many jobs each top-k read returns.
    #[arg(long, value_name = "K", default_value_t = 100)]
    pub(crate) k: usize,
    /// Multiply every sample count by this (at least one sample each):
    /// 200 per single event, 20 for 1 000-event batches, 3 reorganisations,
    /// 1 000 top-k reads.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub(crate) samples_scale: f64,
    /// Seconds to leave the engine idle after the load before measuring its
    /// memory again (`*_settled_*`): the arrangements merge their batches
    /// while idle, so this is the memory a loaded service settles at.
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub(crate) settle_secs: u64,
    /// Batches of each kind whose full recomputation the oracle times.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) oracle_samples: usize,
    /// Events per batch while loading the initial state. Each batch is one
    /// consistent state the engine computes in full (its fair-share factors
    /// move as time passes during the history, re-deriving the jobs already
    /// loaded), so fewer, larger batches load faster; the generator's
    /// chunks bound the memory the load holds at once.
    #[arg(long, value_name = "N", default_value_t = 250_000)]
    pub(crate) load_batch: usize,
    /// The fair-share algorithm (`PriorityFlags` in the generated
    /// configuration), so that every algorithm's cost is measured.
    #[arg(long, value_enum, default_value_t = BenchAlgorithm::FairTree)]
    pub(crate) algorithm: BenchAlgorithm,
    /// Only these update kinds (comma-separated; default: all), e.g.
    /// `--kinds usage_event,usage_batch_1000` to profile one of them.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KIND")]
    pub(crate) kinds: Vec<Kind>,
    /// Let the crossing event settle a `PriorityCalcPeriod` boundary itself
    /// (as `serve --no-calc-period-ticks`), instead of settling it in a
    /// `tick` batch of its own at the boundary, timed apart
    /// (`calc_period_tick`), as `serve` does by default.
    #[arg(long)]
    pub(crate) no_calc_period_ticks: bool,
    /// The generated cluster's `PriorityCalcPeriod`, seconds (300, Slurm's
    /// default of 5 minutes); `0` measures continuous accrual, where every
    /// event that moves time charges every running job.
    #[arg(long = "calc-period", value_name = "SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u32).range(0..=86_400))]
    pub(crate) calc_period_secs: u32,
    /// Only these reads of the `reads` object (comma-separated; default:
    /// all), e.g. `--reads position,top_offset`.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "READ")]
    pub(crate) reads: Vec<ReadKind>,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Seconds the clock moves before each sample.
pub(crate) const STEP_SECS: i64 = 3;

/// Top-k reads at `--samples-scale 1`.
pub(crate) const TOPK_READS: usize = 1_000;

/// Say what the bench does now (not with `--json`).
pub(crate) fn progress(args: &Args, text: &str) {
    if !args.json {
        eprintln!("fairflow bench: {text}");
    }
}

/// Time `kind`, a read at the end of the stream (`restart`,
/// `one_off_top`), with `read` giving each sample's time and answer; the
/// answer's digest is kept for the oracle.
fn end_of_stream_read(
    args: &Args,
    engine: &mut EnginePhase,
    kind: ReadKind,
    mut read: impl FnMut() -> anyhow::Result<(Duration, String)>,
) -> anyhow::Result<()> {
    let samples = crate::bench_setup::scaled(kind.default_samples(), args.samples_scale);
    progress(args, &format!("reads.{}: {samples} samples", kind.key()));
    let mut latency = Latency::new()?;
    for _ in 0..samples {
        let (elapsed, answer) = read()?;
        latency.record(elapsed)?;
        set_digest(engine, kind, &answer);
    }
    engine.reads.push(ReadMeasured { kind, latency });
    Ok(())
}

/// Record the digest of `kind`'s answer at the end of the stream (the last
/// sample's; every sample answers the same state).
fn set_digest(engine: &mut EnginePhase, kind: ReadKind, answer: &str) {
    for check in engine.checks.iter_mut().filter(|check| check.0 == kind) {
        // Samples that disagree never match the oracle.
        let found = digest(answer);
        check.1 = match check.1 {
            Some(before) if before != found => Some(before ^ found ^ 1),
            _ => Some(found),
        };
    }
}

/// Run the bench and print its report.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let params = workload(args);
    let scratch = Scratch::new()?;
    let mut engine = engine_phase(args, &params, &scratch)?;
    let kinds = read_kinds(args);
    if kinds.contains(&ReadKind::Restart) {
        let workers = args.workers.max(1);
        end_of_stream_read(args, &mut engine, ReadKind::Restart, || {
            bench_restart::restart(&scratch, workers, args.k)
        })?;
    }
    let oracle = if args.oracle_samples > 0 {
        Some(oracle_phase(args, &params, &mut engine)?)
    } else {
        None
    };
    if kinds.contains(&ReadKind::OneOffTop) {
        end_of_stream_read(args, &mut engine, ReadKind::OneOffTop, || {
            bench_restart::one_off_top(&scratch.log(), args.k)
        })?;
    }
    drop(scratch);
    let report = report(args, &params, &engine, oracle.as_ref());
    if args.json {
        let mut text = serde_json::to_string_pretty(&report).context("cannot write the report")?;
        text.push('\n');
        emit(&text)
    } else {
        emit(&table(&report))
    }
}
