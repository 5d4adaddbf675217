//! `fairflow bench`'s engine phase: the incremental engine loaded with the
//! generated state, then each update kind timed (`updates`), the top-k
//! reads (`bench_reads`) and the served reads (`bench_service_reads`), and
//! the service data directory the restarts open (`bench_restart`). Every
//! batch goes through the [`Recorder`], so the oracle replays the same
//! stream and the generated log holds it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use fairflow_dataflow::Engine;
use fairflow_engine::IncrementalEngine;
use fairflow_model::event::Op;
use fairflow_model::{Config, Event};
use fairflow_workload::{Generator, WorkloadParams};

use crate::bench_args::{
    progress, read_kinds, Args, Kind, Read, ReadCheck, ReadKind, STEP_SECS, TOPK_READS,
};
use crate::bench_reads;
use crate::bench_restart::{self, Scratch};
use crate::bench_service_reads::{self, ReadMeasured};
use crate::bench_setup::{check_report, draw, generate_initial, scaled, Recorder, Step};
use crate::measure::{self, Latency};

/// One kind's engine measurements.
pub(crate) struct Measured {
    pub(crate) kind: Kind,
    pub(crate) latency: Latency,
    pub(crate) touched_total: u64,
    pub(crate) events_total: u64,
    pub(crate) batches: u64,
    /// The oracle's apply plus full recomputation, per timed batch.
    pub(crate) full_recompute_us: Vec<f64>,
    /// The oracle's apply alone (validation and state update), per timed batch.
    pub(crate) oracle_apply_us: Vec<f64>,
}

/// A checked read's kind and the digest of the engine's answer (`None`
/// until measured).
pub(crate) type Checked = (ReadKind, Option<u64>);

/// The engine phase's results.
pub(crate) struct EnginePhase {
    pub(crate) load_secs: f64,
    pub(crate) load_wall_secs: f64,
    pub(crate) initial_events: u64,
    pub(crate) measured: Vec<Measured>,
    pub(crate) topk: bench_reads::TopkReads,
    /// The served reads (`restart` and `one_off_top` are added after).
    pub(crate) reads: Vec<ReadMeasured>,
    /// Every step in the order applied, for the oracle.
    pub(crate) steps: Vec<Step>,
    /// Each checked read, by check id.
    pub(crate) checks: Vec<Checked>,
    /// `VmHWM` after the updates and top-k reads (before the served reads).
    pub(crate) peak_rss_bytes: Option<u64>,
    /// `VmHWM` after the served reads.
    pub(crate) reads_peak_rss_bytes: Option<u64>,
    /// `VmHWM` and `VmRSS` right after the load.
    pub(crate) load_peak_rss_bytes: Option<u64>,
    pub(crate) rss_after_load_bytes: Option<u64>,
    /// Live allocated bytes right after the load (jemalloc).
    pub(crate) allocated_after_load_bytes: Option<u64>,
    /// `VmRSS` and live bytes after `--settle-secs` idle.
    pub(crate) rss_settled_bytes: Option<u64>,
    pub(crate) allocated_settled_bytes: Option<u64>,
    pub(crate) calc_period_secs: i64,
    /// The delay of each update event that arrived as a
    /// `PriorityCalcPeriod` boundary's settlement started: from the start
    /// of the boundary's `tick` batch (the crossing event's own batch when
    /// boundaries are not ticked) to the event's answer (its batch applied
    /// and the top `k` read).
    pub(crate) boundary_delay: Latency,
}

/// The load's figures.
struct Loaded {
    engine: Engine,
    generator: Generator,
    load_secs: f64,
    load_wall_secs: f64,
    initial_events: u64,
}

/// Feed the generated initial state to a new engine, timing the engine.
fn load(args: &Args, params: &WorkloadParams, recorder: &mut Recorder) -> anyhow::Result<Loaded> {
    let mut engine = Engine::start(args.workers.max(1), Config::default())
        .context("cannot start the incremental engine")?;
    let mut load = Duration::ZERO;
    let mut initial_events = 0u64;
    progress(
        args,
        &format!(
            "loading {} associations, {} pending and {} running jobs",
            params.user_associations, params.pending_jobs, params.running_jobs
        ),
    );
    let wall = Instant::now();
    let generator = generate_initial(
        params,
        args.algorithm,
        args.calc_period_secs,
        args.load_batch,
        |chunk| {
            let sent = chunk.len();
            initial_events += sent as u64;
            let batch = recorder.initial(chunk)?;
            let started = Instant::now();
            let report = engine.apply_batch(batch)?;
            load += started.elapsed();
            check_report("initial-state", sent, &report)
        },
    )?;
    let started = Instant::now();
    black_box(engine.top(args.k)?);
    load += started.elapsed();
    let load_wall_secs = wall.elapsed().as_secs_f64();
    progress(
        args,
        &format!(
            "loaded {initial_events} events in {:.2} s of engine time ({load_wall_secs:.2} s with generation)",
            load.as_secs_f64()
        ),
    );
    Ok(Loaded {
        engine,
        generator,
        load_secs: load.as_secs_f64(),
        load_wall_secs,
        initial_events,
    })
}

/// Apply one batch of `kind` and read the top `k`, timed together; the
/// instant the answer was ready.
fn timed_batch(
    engine: &mut Engine,
    recorder: &mut Recorder,
    m: &mut Measured,
    events: Vec<Event>,
    k: usize,
) -> anyhow::Result<Instant> {
    let sent = events.len();
    let batch = recorder.batch(m.kind, events)?;
    let touched_before = engine.touched_records();
    let started = Instant::now();
    let report = engine.apply_batch(batch)?;
    let top = engine.top(k)?;
    let answered = Instant::now();
    let elapsed = answered - started;
    black_box(top);
    check_report(m.kind.key(), sent, &report)?;
    m.latency.record(elapsed)?;
    m.touched_total += report.input_records as u64 + (engine.touched_records() - touched_before);
    m.events_total += sent as u64;
    m.batches += 1;
    Ok(answered)
}

/// The update events of one sample of `kind`: one batch, or for
/// `start_end` the start and, 3 s later, the end.
fn sample_batches(generator: &mut Generator, kind: Kind) -> anyhow::Result<Vec<Vec<Event>>> {
    generator.advance_by(STEP_SECS);
    let mut pending = vec![draw(generator, kind)?];
    if kind == Kind::StartEnd {
        let Some(Op::Start { job, .. }) = pending[0].first().map(|e| &e.op) else {
            bail!("the generator's start is not a start");
        };
        let job = job.clone();
        generator.advance_by(STEP_SECS);
        let end = generator
            .end_job(&job)
            .with_context(|| format!("the started job {job} is not running"))?;
        pending.push(vec![end]);
    }
    Ok(pending)
}

/// The update phase's figures.
struct Updates {
    measured: Vec<Measured>,
    /// Each boundary-crossing event's delay ([`EnginePhase::boundary_delay`]).
    boundary_delay: Latency,
}

/// Time every update kind asked for.
fn updates(
    args: &Args,
    engine: &mut Engine,
    generator: &mut Generator,
    recorder: &mut Recorder,
    ticks: bool,
) -> anyhow::Result<Updates> {
    let calc_period_secs = engine.config().calc_period_secs;
    let mut measured = Vec::new();
    for kind in Kind::ALL.into_iter().chain([Kind::CalcPeriodTick]) {
        measured.push(Measured {
            kind,
            latency: Latency::new()?,
            touched_total: 0,
            events_total: 0,
            batches: 0,
            full_recompute_us: Vec::new(),
            oracle_apply_us: Vec::new(),
        });
    }
    let mut boundary_delay = Latency::new()?;
    for kind in Kind::ALL {
        if !args.kinds.is_empty() && !args.kinds.contains(&kind) {
            continue;
        }
        let samples = scaled(kind.default_samples(), args.samples_scale);
        progress(args, &format!("{}: {samples} samples", kind.key()));
        for _ in 0..samples {
            for events in sample_batches(generator, kind)? {
                // The boundary this event crosses, if any (whether or not
                // it is settled in a tick of its own).
                let crossed = events.first().and_then(|event| {
                    bench_reads::boundary_tick(true, calc_period_secs, engine.now(), event.t)
                });
                // The event arrives as the boundary's settlement starts:
                // its delay runs from then to its own answer.
                let crosses = crossed.is_some();
                let arrived = Instant::now();
                if let Some(tick) = crossed.filter(|_| ticks) {
                    // The service's ticker settles a boundary in a batch
                    // of its own before the first event after it arrives.
                    let m = &mut measured[Kind::CalcPeriodTick.index()];
                    timed_batch(engine, recorder, m, tick, args.k)?;
                }
                let m = &mut measured[kind.index()];
                let answered = timed_batch(engine, recorder, m, events, args.k)?;
                if crosses {
                    boundary_delay.record(answered - arrived)?;
                }
            }
        }
    }
    Ok(Updates {
        measured,
        boundary_delay,
    })
}

/// What the served reads need of the engine phase.
struct ServedReads<'a> {
    settings: &'a bench_reads::ReadSettings,
    kinds: &'a [ReadKind],
    scratch: &'a Scratch,
}

/// Time the served reads on `engine`, then write the data directory the
/// restarts open; returns the reads and every checked read's kind and
/// engine digest (by check id; the end-of-stream reads' still `None`).
fn served_reads(
    args: &Args,
    served: &ServedReads,
    engine: Engine,
    generator: &mut Generator,
    recorder: &mut Recorder,
) -> anyhow::Result<(Vec<ReadMeasured>, Vec<Checked>)> {
    let settings = bench_service_reads::ServedSettings {
        reads: served.settings,
        kinds: served.kinds,
        samples_scale: args.samples_scale,
        oracle_states: args.oracle_samples,
    };
    let mut digests = Vec::new();
    let (reads, mut backend) = bench_service_reads::measure(
        Box::new(IncrementalEngine { engine }),
        generator,
        &settings,
        recorder,
        &mut digests,
        &|text| progress(args, text),
    )?;
    let mut checks: Vec<Checked> = recorder
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Check(check) => Some((check.kind, digests[check.id])),
            _ => None,
        })
        .collect();
    if served.kinds.contains(&ReadKind::Restart) {
        progress(args, "reads.restart: writing the service's data directory");
        let dir = served.scratch.data_dir();
        std::fs::create_dir_all(&dir)?;
        bench_restart::write_data_dir(&mut backend, generator, recorder, &dir)?;
    }
    // The restart and the one-off top answer at the end of the stream.
    for kind in [ReadKind::Restart, ReadKind::OneOffTop] {
        if served.kinds.contains(&kind) {
            let id = checks.len();
            checks.push((kind, None));
            let read = Read::Query(bench_restart::top_query(args.k));
            recorder.check(ReadCheck { id, kind, read });
        }
    }
    recorder.finish_log()?;
    Ok((reads, checks))
}

/// Run the engine phase; the log and the data directory go to `scratch`.
pub(crate) fn engine_phase(
    args: &Args,
    params: &WorkloadParams,
    scratch: &Scratch,
) -> anyhow::Result<EnginePhase> {
    let kinds = read_kinds(args);
    let log = kinds.contains(&ReadKind::OneOffTop).then(|| scratch.log());
    let mut recorder = Recorder::new(args.oracle_samples > 0, log.as_deref())?;
    let mut loaded = load(args, params, &mut recorder)?;
    let load_peak_rss_bytes = measure::peak_rss_bytes();
    let rss_after_load_bytes = measure::rss_bytes();
    let allocated_after_load_bytes = measure::allocated_bytes();
    let (rss_settled_bytes, allocated_settled_bytes) = if args.settle_secs > 0 {
        std::thread::sleep(Duration::from_secs(args.settle_secs));
        (measure::rss_bytes(), measure::allocated_bytes())
    } else {
        (None, None)
    };
    let engine = &mut loaded.engine;
    let generator = &mut loaded.generator;
    let calc_period_secs = engine.config().calc_period_secs;
    let ticks = calc_period_secs > 0 && !args.no_calc_period_ticks;
    let Updates {
        measured,
        boundary_delay,
    } = updates(args, engine, generator, &mut recorder, ticks)?;
    let settings = bench_reads::ReadSettings {
        k: args.k,
        reads: scaled(TOPK_READS, args.samples_scale),
        boundary_ticks: ticks,
        calc_period_secs,
    };
    progress(
        args,
        &format!(
            "topk_read: {} computed reads, as many cached",
            settings.reads
        ),
    );
    let topk = bench_reads::measure(engine, generator, &settings, |engine, events| {
        // Kept as the kinds they are; the oracle times only the update
        // phase's first batches of each kind.
        let kind = match events.first().map(|e| &e.op) {
            Some(Op::Tick) => Kind::CalcPeriodTick,
            _ => Kind::UsageEvent,
        };
        let sent = events.len();
        let report = engine.apply_batch(recorder.batch(kind, events)?)?;
        check_report("topk_read", sent, &report)
    })?;
    recorder.topk_end();
    let peak_rss_bytes = measure::peak_rss_bytes();
    let Loaded {
        engine,
        mut generator,
        ..
    } = loaded;
    let served = ServedReads {
        settings: &settings,
        kinds: &kinds,
        scratch,
    };
    let (reads, checks) = served_reads(args, &served, engine, &mut generator, &mut recorder)?;
    let reads_peak_rss_bytes = measure::peak_rss_bytes();
    Ok(EnginePhase {
        load_secs: loaded.load_secs,
        load_wall_secs: loaded.load_wall_secs,
        initial_events: loaded.initial_events,
        measured,
        topk,
        reads,
        steps: recorder.steps,
        checks,
        peak_rss_bytes,
        reads_peak_rss_bytes,
        load_peak_rss_bytes,
        rss_after_load_bytes,
        allocated_after_load_bytes,
        rss_settled_bytes,
        allocated_settled_bytes,
        calc_period_secs,
        boundary_delay,
    })
}
