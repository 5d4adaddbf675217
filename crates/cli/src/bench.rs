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
//!    `boundary_delay_p50_us` and `boundary_delay_p99_us` (issue 36 item 2)
//!    are the delays of the events that cross a boundary, each taken from
//!    its arrival, which is when the boundary's tick starts (the event's
//!    batch is queued behind it), to its answer (its batch applied and the
//!    top `k` read); without ticks, the crossing event's own latency.
//!    `null` when no sampled event crossed a boundary (`--calc-period 0`).
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

pub use crate::bench_args::Args;
use crate::bench_args::{progress, read_kinds, ReadKind};
use crate::bench_engine::{engine_phase, EnginePhase};
use crate::bench_oracle::oracle_phase;
use crate::bench_output::{report, table};
use crate::bench_restart::{self, Scratch};
use crate::bench_service_reads::{digest, ReadMeasured};
use crate::bench_setup::workload;
use crate::measure::Latency;
use crate::output::emit;

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
