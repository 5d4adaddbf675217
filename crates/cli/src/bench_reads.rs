//! `fairflow bench`'s top-k reads, timed as the service meets them.
//!
//! The engine keeps its last top-k answer while neither its time nor its
//! facts change, so a read repeated with nothing in between is one
//! reference count. That figure is reported apart (`topk_read_cached`);
//! `topk_read` times reads that compute:
//! - **after time moved**: a `tick` one second on (time passing without any
//!   fact changing, as between two reads of a service whose ticker or
//!   writers moved its clock) is applied, untimed, then `top(k)` is timed;
//! - **after a fact change**: one usage event at the same time is applied,
//!   untimed, then `top(k)` is timed. The incremental engine reads the top
//!   `k` it was last asked for inside every batch that changed something
//!   (`Engine::keep_top`), so this read finds it ready: its cost is in the
//!   update's latency (`updates`), and this figure is what a reader waits
//!   after that update. A moved time with nothing to send runs no batch, so
//!   the read after it computes the top itself.
//!
//! The two alternate. Where a moved time crosses a `PriorityCalcPeriod`
//! boundary and the service would settle it (its ticker), the boundary's
//! own `tick` is applied first, untimed, as in the update phase. Every
//! batch applied here is handed back, so the oracle replays the same stream
//! and compares its top `k` at the end.

use std::hint::black_box;
use std::time::Instant;

use fairflow_dataflow::Engine;
use fairflow_model::event::Op;
use fairflow_model::{Event, Time};
use fairflow_service::backend::Gauges;
use fairflow_service::ticks::due_calc_period_boundary;
use fairflow_workload::Generator;

use crate::measure::Latency;

/// The timed reads, by situation.
pub struct TopkReads {
    /// Reads after a moved time and after a fact change, together.
    pub computed: Latency,
    /// Reads right after time moved one second without events.
    pub after_time_move: Latency,
    /// Reads right after one usage event.
    pub after_fact_change: Latency,
    /// Reads repeated with nothing applied between them (the engine's kept
    /// answer).
    pub cached: Latency,
    /// The last answer's job ids, for the comparison with the oracle.
    pub last_top: Vec<String>,
}

/// What the read phase needs to know of the bench.
pub struct ReadSettings {
    /// Jobs per read.
    pub k: usize,
    /// Computed reads (half after a time move, half after a fact change),
    /// and as many cached ones.
    pub reads: usize,
    /// Settle a crossed calc-period boundary in a tick of its own first.
    pub boundary_ticks: bool,
    /// The generated cluster's `PriorityCalcPeriod`, seconds.
    pub calc_period_secs: i64,
}

/// The `tick` that settles the `PriorityCalcPeriod` boundary an event at
/// `t` crosses, when boundaries are settled apart and the engine, at
/// `engine_now`, is before it: the service's ticker's own rule
/// (`fairflow_service::ticks::due_calc_period_boundary`), with the event's
/// time for the wall clock's.
pub fn boundary_tick(
    boundary_ticks: bool,
    calc_period_secs: i64,
    engine_now: Time,
    t: Time,
) -> Option<Vec<Event>> {
    if !boundary_ticks {
        return None;
    }
    let gauges = Gauges {
        now: engine_now,
        calc_period_secs,
        ..Gauges::default()
    };
    due_calc_period_boundary(gauges, t).map(|boundary| {
        vec![Event {
            t: boundary,
            op: Op::Tick,
        }]
    })
}

/// The batches that give a read a state nothing was computed for: when
/// `time_moves`, a `tick` one second on (after the tick of a boundary it
/// crosses, as the service's ticker settles it); otherwise one usage event
/// at the same time.
pub fn next_state(
    generator: &mut Generator,
    settings: &ReadSettings,
    engine_now: Time,
    time_moves: bool,
) -> Vec<Vec<Event>> {
    if !time_moves {
        return vec![vec![generator.usage()]];
    }
    generator.advance_by(1);
    let t = generator.now();
    let settle = boundary_tick(
        settings.boundary_ticks,
        settings.calc_period_secs,
        engine_now,
        t,
    );
    settle
        .into_iter()
        .chain([vec![Event { t, op: Op::Tick }]])
        .collect()
}

/// Time the reads. `apply` applies one batch (numbering its lines and
/// keeping it for the oracle); it is never timed here.
pub fn measure(
    engine: &mut Engine,
    generator: &mut Generator,
    settings: &ReadSettings,
    mut apply: impl FnMut(&mut Engine, Vec<Event>) -> anyhow::Result<()>,
) -> anyhow::Result<TopkReads> {
    let mut reads = TopkReads {
        computed: Latency::new()?,
        after_time_move: Latency::new()?,
        after_fact_change: Latency::new()?,
        cached: Latency::new()?,
        last_top: Vec::new(),
    };
    for read in 0..settings.reads {
        let time_moves = read % 2 == 0;
        for batch in next_state(generator, settings, engine.now(), time_moves) {
            apply(engine, batch)?;
        }
        let started = Instant::now();
        let top = engine.top(settings.k)?;
        let elapsed = started.elapsed();
        reads.computed.record(elapsed)?;
        if time_moves {
            reads.after_time_move.record(elapsed)?;
        } else {
            reads.after_fact_change.record(elapsed)?;
        }
        reads.last_top = top.iter().map(|p| p.job.clone()).collect();
    }
    for _ in 0..settings.reads {
        let started = Instant::now();
        let top = engine.top(settings.k)?;
        reads.cached.record(started.elapsed())?;
        black_box(top);
    }
    Ok(reads)
}
