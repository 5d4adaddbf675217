//! Fair-share history: what the service keeps of each association's
//! fair-share over time, and the one rule that takes it, which the service
//! and `fairflow history --events` (the batch path) both follow.
//!
//! **Steps.** Steps are the multiples of the step (`serve
//! --history-step-secs`; by default the `PriorityCalcPeriod` in force when the
//! first step is due, when it is > 0, else 300 s) in engine time. The step at
//! `T` is taken when the engine is about to apply the first event timed after
//! `T` (or `T` is the engine's time then): every event timed at or before `T`
//! applied, time moved to `T` by a **`tick` event at `T`** (time advances,
//! nothing else: what the calc-period ticker writes), then one read. The
//! service logs that tick just before the event that crossed the step
//! (`Backend::apply_logging_own`), whether that event is accepted or not, so
//! a replay of the log (a restart, `--events`) moves time exactly as the
//! live engine did; a log that already holds a tick at `T` (a replay) needs
//! none. So a step's values are exactly the state as of `T`, whether the
//! events came live, from a replay or through `--events`; [`Stepper`] is
//! that rule, in the service's backend (`engine_backend`) and in the batch
//! path alike. A gap of several steps between two events takes each of
//! them, but no step older than the retention before the event that crosses
//! it. The step at `T` appears once the engine's time passes `T`: in a live
//! service, at the next calc-period tick or event.
//!
//! **The read** ([`read_step`]), on the applier, costs the associations and
//! the rank depth `D`, never the jobs: the fair-share table
//! (`Engine::fairshare`, the read `sshare` and `/metrics` use) with each
//! user association's pending jobs beside its row
//! (`Engine::fairshare_with_pending`: the queue's per-user job sets' sizes)
//! and the queue's first `D` entries
//! (`Engine::top`; `serve --history-rank-depth`, default
//! [`DEFAULT_RANK_DEPTH`]). A user's best queue rank is exact when its best
//! entry is among those `D`; otherwise the step says "beyond `D`" (a best
//! rank needs every entry ahead of it, which past the head is the whole
//! ordered queue).
//!
//! **What a step holds** (`record`): per association of the table (account
//! and user rows, as `sshare -a -l`; `root` included): raw usage, normalized
//! shares, normalized usage, effective usage, LevelFS (Fair Tree; absent
//! otherwise), the fair-share factor (sshare's `FairShare` cell) and a
//! **rank**: a user association's place among every user association by
//! factor, highest first (1: the user whose jobs the fair-share factor
//! favours most); an account's place among its sibling accounts in
//! fair-share order (LevelFS, highest first, where the algorithm has it,
//! else the factor). Ties go in table order (names). Per user association,
//! also the pending (ranked) job count (each job once, whatever its
//! partitions) and the best queue rank of its pending jobs (1: first in
//! line), or "beyond `D`".
//!
//! **On disk and in memory** (`store`): `DATA/history/`. A dictionary file
//! gives each association a dense id (append-only); one file per UTC day of
//! step time holds that day's steps, each a frame `[len][crc32][time][rows]
//! [rows x 44 bytes]`, row `i` being association `i`'s. So a step costs 44
//! bytes per association on disk, and an association's series is read with
//! one 44-byte read per step. In memory the store keeps the dictionary
//! (names and an id per association, whatever the number of steps) and 24
//! bytes per step (time, file, offset): **0 bytes per association per
//! step**. A step is written and synced before the next is taken; at open,
//! the last frame of the last file is checked (length and checksum) and a
//! torn one is cut with a log line, so a crash loses at most the step being
//! written. Steps older than the retention before the newest are dropped
//! from the index and their day files deleted once the whole day is older.

use std::sync::Arc;

use fairflow_engine::{Engine, EngineError};
use fairflow_ingest::{LogLine, Rejection};
use fairflow_model::event::Op;
use fairflow_model::report::FairshareTable;
use fairflow_model::{Event, Time};

pub mod record;
pub mod store;

pub use record::{Dictionary, HistoryPoint, HistorySeries, ROW_BYTES};
pub use store::{HistoryError, HistoryStore, SharedHistory};

/// The step when neither `--history-step-secs` nor `PriorityCalcPeriod`
/// gives one, seconds.
pub const DEFAULT_STEP_SECS: Time = 300;

/// The retention when none is given: 7 days, seconds.
pub const DEFAULT_RETENTION_SECS: Time = 7 * 86_400;

/// Beside each row of a step's table (same index), its user association's
/// pending (ranked) jobs and the best queue rank among them (1: first in
/// line; 0: its best entry is beyond the rank depth,
/// [`StepRead::rank_depth`]); `(0, 0)` on account rows. Placed by index,
/// not keyed by name: a step reads every user association (a hundred
/// thousand at scale), and copying and hashing their names showed.
pub type PendingByRow = Vec<(u32, u32)>;

/// The rank depth when none is given (`serve --history-rank-depth`): the
/// queue's first 1,000 entries.
pub const DEFAULT_RANK_DEPTH: u32 = 1_000;

/// One step's read of the engine: the fair-share table and the queue.
#[derive(Debug, Clone)]
pub struct StepRead {
    /// The step's engine time.
    pub at: Time,
    /// The fair-share table as of `at`.
    pub table: Arc<FairshareTable>,
    /// Beside each of `table`'s rows, its user association's pending jobs
    /// and best queue rank.
    pub pending: PendingByRow,
    /// Best queue ranks are exact within the queue's first this many
    /// entries; a user whose best entry lies beyond has rank 0 in
    /// [`StepRead::pending`] ("beyond `rank_depth`").
    pub rank_depth: u32,
}

/// Read the engine for the step at `at` (its time already there): the
/// fair-share table and each user's pending jobs beside its row
/// (`Engine::fairshare_with_pending`: the queue's per-user counts) and
/// their best ranks within the queue's first `rank_depth` entries
/// (`Engine::top`).
pub fn read_step(
    engine: &mut dyn Engine,
    at: Time,
    rank_depth: u32,
) -> Result<StepRead, EngineError> {
    let (table, counts) = engine.fairshare_with_pending()?;
    let head = engine.top(rank_depth as usize)?;
    // Each user's best rank in the head: jobs and entries of one user come
    // in rank order, so its first is its best.
    let mut best_rank: rustc_hash::FxHashMap<(&str, &str), u32> = Default::default();
    for (index, job) in head.iter().enumerate() {
        let rank = u32::try_from(index + 1).unwrap_or(u32::MAX);
        best_rank
            .entry((job.account.as_str(), job.user.as_str()))
            .or_insert(rank);
    }
    let pending = (table.rows.iter().zip(counts))
        .map(|(row, jobs)| {
            let jobs = u32::try_from(jobs).unwrap_or(u32::MAX);
            let best = match &row.user {
                Some(user) if jobs > 0 => best_rank
                    .get(&(row.account.as_str(), user.as_str()))
                    .copied()
                    .unwrap_or(0),
                _ => 0,
            };
            (jobs, best)
        })
        .collect();
    Ok(StepRead {
        at,
        table: Arc::new(table),
        pending,
        rank_depth,
    })
}

/// What [`Stepper::apply`] did besides the steps: the lines rejected, and
/// the `tick`s it applied to move the engine to each step, each with the
/// line it was applied before (the service logs them there, so a replay of
/// the log moves time as the live engine did).
#[derive(Debug, Default)]
pub struct Applied {
    /// The rejected lines.
    pub rejected: Vec<Rejection>,
    /// `(line, tick)`: each tick applied just before that line.
    pub ticks: Vec<(u64, Event)>,
}

/// The step rule ([module docs](self)): applies batches to an engine,
/// taking each step as the first event after it is about to apply.
#[derive(Debug, Clone)]
pub struct Stepper {
    /// The step asked for; `None`: the calc period, else the default.
    asked_step_secs: Option<Time>,
    /// The step in force, fixed when the first is due.
    step_secs: Option<Time>,
    /// Steps older than this before the event that crosses them are not taken.
    retention_secs: Time,
    /// The last step taken (or recorded before a restart).
    last_taken: Option<Time>,
    /// Best queue ranks are exact within this many entries.
    rank_depth: u32,
}

impl Stepper {
    /// A stepper of `step_secs` (`None`: the calc period when > 0, else
    /// [`DEFAULT_STEP_SECS`]) that takes no step at or before `last_taken`.
    pub fn new(step_secs: Option<Time>, retention_secs: Time, last_taken: Option<Time>) -> Self {
        Stepper {
            asked_step_secs: step_secs.filter(|&s| s > 0),
            step_secs: None,
            retention_secs: retention_secs.max(1),
            last_taken,
            rank_depth: DEFAULT_RANK_DEPTH,
        }
    }

    /// Record best queue ranks within the queue's first `rank_depth`
    /// entries (at least 1), "beyond" past them.
    pub fn with_rank_depth(mut self, rank_depth: u32) -> Self {
        self.rank_depth = rank_depth.max(1);
        self
    }

    /// The step in force, seconds (`None` until the first is due).
    pub fn step_secs(&self) -> Option<Time> {
        self.step_secs
    }

    /// The next step due after the engine's time `now`: the first multiple
    /// of the step at or after `now` and after the last one taken.
    fn next_step(&mut self, engine: &dyn Engine, now: Time) -> Time {
        let step = *self.step_secs.get_or_insert_with(|| {
            let calc = engine.config().calc_period_secs;
            self.asked_step_secs
                .unwrap_or(if calc > 0 { calc } else { DEFAULT_STEP_SECS })
        });
        let from = match self.last_taken {
            Some(last) if last >= now => last.saturating_add(1),
            _ => now,
        };
        from.div_euclid(step)
            .saturating_add(i64::from(from.rem_euclid(step) != 0))
            .saturating_mul(step)
    }

    /// Apply `lines` to `engine` in order, handing `take` each step the
    /// lines cross (read by [`read_step`]). The engine is moved to a step
    /// by a `tick` event at the step (returned with the line it went
    /// before), never by a move a log would not hold.
    pub fn apply(
        &mut self,
        engine: &mut dyn Engine,
        lines: Vec<LogLine>,
        take: &mut dyn FnMut(StepRead),
    ) -> Result<Applied, EngineError> {
        let mut applied = Applied::default();
        let mut rest = lines;
        while !rest.is_empty() {
            let Some(now) = engine.now() else {
                // No time yet: the first line alone gives one (and the
                // configuration the step is taken from).
                let tail = rest.split_off(1);
                applied.rejected.extend(engine.apply(rest)?);
                rest = tail;
                continue;
            };
            let step = self.next_step(engine, now);
            let crossing = rest
                .iter()
                .position(|l| l.event.as_ref().is_ok_and(|e| e.t > step));
            let Some(index) = crossing else {
                applied.rejected.extend(engine.apply(rest)?);
                break;
            };
            let tail = rest.split_off(index);
            if !rest.is_empty() {
                applied.rejected.extend(engine.apply(rest)?);
            }
            rest = tail;
            let crossing_t = rest[0].event.as_ref().map_or(step, |e| e.t);
            let oldest_kept = crossing_t.saturating_sub(self.retention_secs);
            if step >= oldest_kept {
                self.tick_to(engine, step, rest[0].line, &mut applied)?;
                take(read_step(engine, step, self.rank_depth)?);
            }
            self.last_taken = Some(step.max(self.last_taken.unwrap_or(step)));
            if step < oldest_kept {
                // Skip to the steps the retention keeps.
                self.last_taken = Some(oldest_kept.saturating_sub(1));
            }
        }
        Ok(applied)
    }

    /// Move `engine` to `step` by a `tick` (time advances, nothing else),
    /// unless it is there already; the tick noted in `applied` as going
    /// before line `before`.
    fn tick_to(
        &self,
        engine: &mut dyn Engine,
        step: Time,
        before: u64,
        applied: &mut Applied,
    ) -> Result<(), EngineError> {
        if engine.now().is_some_and(|now| now >= step) {
            return Ok(());
        }
        let tick = Event {
            t: step,
            op: Op::Tick,
        };
        let line = LogLine {
            line: before,
            event: Ok(tick.clone()),
        };
        let rejected = engine.apply(vec![line])?;
        match rejected.first() {
            // A tick at or after the engine's time passes every check.
            Some(rejection) => tracing::warn!("history: the step's tick was refused: {rejection}"),
            None => applied.ticks.push((before, tick)),
        }
        Ok(())
    }
}

/// The service's side of the step rule: the [`Stepper`] and where its
/// steps go (the store's writer thread, `store::spawn_writer`), so the
/// applier pays for the step's read and not for its write.
#[derive(Debug)]
pub struct HistoryRecorder {
    stepper: Stepper,
    sink: std::sync::mpsc::SyncSender<StepRead>,
}

impl HistoryRecorder {
    /// Record the steps of `stepper` through `sink`.
    pub fn new(stepper: Stepper, sink: std::sync::mpsc::SyncSender<StepRead>) -> Self {
        HistoryRecorder { stepper, sink }
    }

    /// [`Stepper::apply`], each step sent to the writer.
    pub fn apply(
        &mut self,
        engine: &mut dyn Engine,
        lines: Vec<LogLine>,
    ) -> Result<Applied, EngineError> {
        let sink = &self.sink;
        self.stepper.apply(engine, lines, &mut |step| {
            // The writer ends only with the process.
            let _ = sink.send(step);
        })
    }
}
