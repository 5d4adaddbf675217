//! The reader of one shard ([`PriorityReader`], after the probe passed the
//! batch): it meets the captured rows with their combinations' contexts
//! into records, applies them and the facts to its shard's [`Queue`], and
//! answers the reads (`top`, `job`, `evaluate_all`, `ahead_of`) with
//! Slurm's `INCR_ONLY` memory.
//!
//! `top(k, now)` takes candidates from the queue in non-increasing order of
//! their upper bound at `now` (a best-first merge over the users, see
//! [`queue`]), computes each candidate's exact priority with the shared
//! formulas ([`PriorityRecord::evaluate`], bit-identical to the oracle),
//! keeps the best `k` by `QueueKey`, and stops when the next bound is more
//! than 1 below the `k`-th priority (so no unread job can reach or tie it:
//! the final priority is truncated or rounded). Cost: `O(k + ties)` record
//! evaluations plus `O(log n)` per candidate. When fewer than `k` jobs are
//! above the model's floor (Slurm 1, Flux 0: e.g. all weights 0, where
//! every job ties), the reader stops as soon as no unread job can exceed
//! the floor and fills the rest from the submit-time order:
//! `O(k + jobs above the floor)`. The reader keeps the first jobs of its
//! last search and the bounds of the rest ([`kept`]): after a batch that
//! brought no fact it re-ranks those with the jobs the batch changed, and
//! searches only when that cannot prove the first `k`. The driver
//! (`Engine::top`) keeps the last read, named and shared, and has worker 0
//! read its top `k'` in each batch's round trip.

pub mod ahead;
pub mod factors;
mod kept;
pub mod page;
pub mod waiting;
pub mod whatif;

use std::collections::BTreeMap;
use std::sync::Arc;

use fairflow_model::report::{CompactJobs, JobIdKey, JobPriority, JobState};
use fairflow_model::{PriorityModel, Time};

use super::combo::{Combo, JobContext};
use super::inputs::{ordered_submit, JobRow, Phase};
use super::moab;
use super::queue::{Capture, Captured, Queue};
use super::record::{self, PriorityRecord};
use crate::names::JobNames;
use crate::types::{AssocId, Epoch, JobId, TouchCounter};

/// A candidate of a top read, ranked before it is evaluated whole: its
/// priority at the read's time, its name and where to evaluate it from.
struct Ranked<'q> {
    priority: u64,
    name: Arc<str>,
    record: &'q PriorityRecord,
    fairshare: f64,
}

impl Ranked<'_> {
    /// The queue's order ([`JobPriority::queue_key`]'s): priority
    /// descending, submit time, job id.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.cmp_to(other.priority, other.record.row.submit_at, &other.name)
    }

    /// [`Ranked::cmp`] against a job given by its priority, submit time
    /// and name.
    fn cmp_to(&self, priority: u64, submit_at: Time, name: &str) -> std::cmp::Ordering {
        priority
            .cmp(&self.priority)
            .then(self.record.row.submit_at.cmp(&submit_at))
            .then_with(|| JobIdKey::compare(&self.name, name))
    }
}

/// Slurm's `INCR_ONLY` memory: job -> (its stay in the queue, its floor).
pub type IncrFloors = BTreeMap<String, ((Time, u32), u64)>;

/// Reads one shard of the priority outputs (after the probe passed the
/// batch): the [`Queue`] the captured updates are applied to, and Slurm's
/// `INCR_ONLY` memory of its jobs.
pub struct PriorityReader {
    /// The active jobs' names (ties in the queue are broken by name).
    names: JobNames,
    capture: Capture,
    queue: Queue,
    touched: TouchCounter,
    /// `INCR_ONLY` memory: job -> (stay, floor).
    floors: IncrFloors,
    /// The first jobs of the last top read ([`kept`]).
    kept: Option<kept::KeptTop>,
    /// What was absorbed since.
    since_kept: kept::SinceKept,
    /// Top reads answered from the kept top (not searched).
    kept_reads: u64,
    /// Every combination's context, as captured.
    contexts: std::collections::HashMap<Combo, Arc<JobContext>>,
    /// This shard's jobs by the combination their row names.
    combo_jobs: std::collections::BTreeSet<(Combo, JobId)>,
    /// The counted jobs' keys of the last what-if tally that kept moved
    /// jobs ([`whatif::TalliedKeys`]).
    tallied: Option<whatif::TalliedKeys>,
    /// How the what-if tallies were counted.
    tally_paths: whatif::TallyPaths,
    /// Are what-if tallies counted from the bounds where they hold (not
    /// only read job by job)? Off only in tests of the reading paths.
    tally_by_count: bool,
    /// Does the next absorb keep the factors it changes (`factors`)?
    watching_factors: bool,
    /// The factors the last watched absorb changed.
    watched_factors: Vec<factors::TrialFactor>,
}

impl PriorityReader {
    /// A reader of the updates [`build`] captures in `capture` (this
    /// worker's [`PriorityOutputs::capture`]), naming jobs from `names`; the queue's
    /// own updates are counted in `touched`.
    pub fn new(names: JobNames, capture: Capture, touched: TouchCounter) -> Self {
        PriorityReader {
            names,
            capture,
            queue: Queue::new(),
            touched,
            floors: BTreeMap::new(),
            kept: None,
            since_kept: kept::SinceKept::default(),
            kept_reads: 0,
            contexts: std::collections::HashMap::new(),
            combo_jobs: std::collections::BTreeSet::new(),
            tallied: None,
            tally_paths: whatif::TallyPaths::default(),
            tally_by_count: true,
            watching_factors: false,
            watched_factors: Vec::new(),
        }
    }

    /// Apply what the dataflow emitted since the last call (the driver calls
    /// it once the probe passed a batch; every read calls it too). When
    /// factors are watched ([`PriorityReader::watch_factors`]), the factors
    /// this absorb changes are kept for [`PriorityReader::take_factor_changes`].
    pub fn absorb(&mut self) {
        if self.watching_factors {
            self.watching_factors = false;
            self.watched_factors = self.absorb_factor_changes();
            return;
        }
        self.absorb_captured();
    }

    /// [`PriorityReader::absorb`] without a watch.
    fn absorb_captured(&mut self) {
        let capture = self.capture.clone();
        let mut captured = capture.borrow_mut();
        if captured.rows.is_empty() && captured.contexts.is_empty() && captured.facts.is_empty() {
            return;
        }
        self.join_rows(&mut captured);
        self.since_kept.note(&mut self.kept, &captured);
        self.tallied = None;
        self.queue.absorb(&mut captured, &self.touched);
    }

    /// Apply the captured row and context updates of the logical times
    /// before `upper` (complete: the probes of both priority dataflows
    /// passed them), leaving the facts and later updates for the next
    /// [`absorb`]: a shard other than worker 0's absorbs its jobs while
    /// worker 0 works, instead of at its next read. The queue's state is a
    /// function of the rows, contexts and facts it holds, whatever the order
    /// they came in.
    ///
    /// [`absorb`]: PriorityReader::absorb
    pub fn absorb_records_before(&mut self, upper: Epoch) {
        let capture = self.capture.clone();
        let mut captured = capture.borrow_mut();
        if captured.rows.is_empty() && captured.contexts.is_empty() {
            return;
        }
        // Nothing complete yet: leave the pending updates where they are
        // (this runs after every step of the worker).
        if captured.pending_from.is_some_and(|from| from >= upper) {
            return;
        }
        let (rows, later_rows): (Vec<_>, Vec<_>) = std::mem::take(&mut captured.rows)
            .into_iter()
            .partition(|(_, time, _)| *time < upper);
        let (contexts, later_contexts): (Vec<_>, Vec<_>) = std::mem::take(&mut captured.contexts)
            .into_iter()
            .partition(|(_, time, _)| *time < upper);
        captured.pending_from = later_rows
            .iter()
            .map(|(_, time, _)| *time)
            .chain(later_contexts.iter().map(|(_, time, _)| *time))
            .min();
        captured.rows = later_rows;
        captured.contexts = later_contexts;
        if rows.is_empty() && contexts.is_empty() {
            return;
        }
        let mut ready = Captured {
            rows,
            contexts,
            ..Captured::default()
        };
        self.join_rows(&mut ready);
        self.since_kept.note(&mut self.kept, &ready);
        self.tallied = None;
        self.queue.absorb(&mut ready, &self.touched);
    }

    /// Meet the captured rows with their combinations' contexts: move
    /// `captured`'s rows and contexts into record updates (`records`), the
    /// queue's input. A job whose row changed gets its new row's record; a
    /// combination whose context changed re-derives the record of each of
    /// its jobs on this shard. Each record removed or added counts as one
    /// touched record. Updates of several logical times consolidate: the
    /// records follow the last rows and contexts, as the queue needs.
    fn join_rows(&mut self, captured: &mut Captured) {
        if captured.rows.is_empty() && captured.contexts.is_empty() {
            return;
        }
        let mut records: Vec<((JobId, PriorityRecord), Epoch, isize)> = Vec::new();
        // Contexts: retractions first (a changed context is a retraction
        // and an insertion of the same combination).
        let mut contexts: Vec<((Combo, Arc<JobContext>), isize)> = captured
            .contexts
            .drain(..)
            .map(|(update, _, diff)| (update, diff))
            .collect();
        differential_dataflow::consolidation::consolidate(&mut contexts);
        let mut changed: Vec<Combo> = Vec::with_capacity(contexts.len());
        for ((combo, context), _) in contexts.iter().filter(|(_, diff)| *diff < 0) {
            if self.contexts.get(combo) == Some(context) {
                self.contexts.remove(combo);
            }
            changed.push(*combo);
        }
        for ((combo, context), _) in contexts.into_iter().filter(|(_, diff)| *diff > 0) {
            self.contexts.insert(combo, context);
            changed.push(combo);
        }
        changed.sort_unstable();
        changed.dedup();

        // Rows: each job's net change, by job.
        let mut rows: Vec<(JobRow, isize)> = captured
            .rows
            .drain(..)
            .map(|(row, _, diff)| (row, diff))
            .collect();
        differential_dataflow::consolidation::consolidate(&mut rows);
        rows.sort_by_key(|(row, diff)| (row.job, *diff));
        let mut jobs_changed: Vec<JobId> = Vec::with_capacity(rows.len());
        for (row, diff) in rows {
            if jobs_changed.last() != Some(&row.job) {
                jobs_changed.push(row.job);
                // The job's record as the queue holds it goes, whatever
                // context it was made with.
                if let Some(old) = self.queue.record(row.job) {
                    self.combo_jobs.remove(&(Combo::of(&old.row), row.job));
                    records.push(((row.job, old.clone()), 0, -1));
                }
            }
            if diff > 0 {
                let combo = Combo::of(&row);
                let Some(context) = self.contexts.get(&combo) else {
                    debug_assert!(false, "a row before its combination's context");
                    continue;
                };
                self.combo_jobs.insert((combo, row.job));
                records.push(((row.job, record::build_record(&row, context)), 0, 1));
            }
        }
        // Contexts that changed: the other jobs naming them.
        for combo in changed {
            let Some(context) = self.contexts.get(&combo) else {
                continue;
            };
            for &(_, job) in self
                .combo_jobs
                .range((combo, JobId::MIN)..=(combo, JobId::MAX))
            {
                if jobs_changed.binary_search(&job).is_ok() {
                    continue;
                }
                let Some(old) = self.queue.record(job) else {
                    continue;
                };
                if Arc::ptr_eq(&old.context, context) || old.context == *context {
                    continue;
                }
                let new = record::build_record(&old.row, context);
                records.push(((job, old.clone()), 0, -1));
                records.push(((job, new), 0, 1));
            }
        }
        self.touched.add(records.len() as u64);
        captured.records.append(&mut records);
    }

    /// The `INCR_ONLY` memory (for a snapshot).
    pub fn floors(&self) -> &IncrFloors {
        &self.floors
    }

    /// Replace the `INCR_ONLY` memory (a restore).
    pub fn set_floors(&mut self, floors: IncrFloors) {
        self.floors = floors;
    }

    /// The record's job's name (`""` if the table no longer has it, which a
    /// driver that publishes names before each batch never lets happen).
    fn name_of(&self, record: &PriorityRecord) -> Arc<str> {
        self.name_of_job(record.job())
    }

    /// Job `job`'s name, as [`PriorityReader::name_of`] gives it, without
    /// its record.
    fn name_of_job(&self, job: JobId) -> Arc<str> {
        self.names.get(job).unwrap_or_else(|| Arc::from(""))
    }

    fn floor_of(&self, name: &str, record: &PriorityRecord) -> Option<u64> {
        self.floors
            .get(name)
            .filter(|(stay, _)| *stay == record.stay())
            .map(|(_, floor)| *floor)
    }

    /// The record evaluated at `now` with its user's factor, named, with
    /// its `INCR_ONLY` floor.
    fn evaluate(&self, record: &PriorityRecord, now: Time) -> Option<JobPriority> {
        self.evaluate_with(record, self.queue.fairshare_of(record.row.assoc), now)
    }

    /// [`PriorityReader::evaluate`] with the user's factor given (a pass over
    /// every record reads the factors from one table).
    fn evaluate_with(
        &self,
        record: &PriorityRecord,
        fairshare: f64,
        now: Time,
    ) -> Option<JobPriority> {
        let name = self.name_of(record);
        record.evaluate(&name, fairshare, now, self.floor_of(&name, record))
    }

    /// A user association's factor from a [`Queue::factor_table`].
    fn factor_in(table: &[f64], record: &PriorityRecord) -> f64 {
        table.get(record.row.assoc as usize).copied().unwrap_or(0.0)
    }

    /// One job's priority and factors at `now` (`explain`, `sprio -j`):
    /// `None` when the job is not active or not listed. Slurm and Flux: one
    /// lookup; Moab: `O(active jobs)` (per-user running totals).
    pub fn job(&mut self, job: JobId, now: Time) -> Option<JobPriority> {
        self.absorb();
        let record = self.queue.record(job)?;
        if record.model() == PriorityModel::Moab {
            let name = self.name_of(record);
            return self.evaluate_all(now).into_iter().find(|p| *p.job == *name);
        }
        self.evaluate(record, now)
    }

    /// Every listed job's priority at `now`, in job-name order (the oracle's
    /// `priority::evaluate`). `O(active jobs)`.
    pub fn evaluate_all(&mut self, now: Time) -> Vec<JobPriority> {
        self.absorb();
        let mut all = self.listed_priorities(now);
        all.sort_by(|a, b| a.job.cmp(&b.job));
        all
    }

    /// [`PriorityReader::evaluate_all`] held compactly: each job's priority
    /// is encoded as it is evaluated, so the shard never holds every job's
    /// decoded priority at once.
    pub fn evaluate_all_compact(&mut self, now: Time) -> CompactJobs {
        self.absorb();
        let mut all = CompactJobs::new();
        self.each_listed(now, |job| all.push(&job));
        all.sorted_by_job()
    }

    /// Every listed job's priority at `now`, in no particular order (Moab:
    /// its read-time evaluation over every record). `O(active jobs)`.
    fn listed_priorities(&self, now: Time) -> Vec<JobPriority> {
        let mut all = Vec::new();
        self.each_listed(now, |job| all.push(job));
        all
    }

    /// Each listed job's priority at `now`, handed to `each` as it is
    /// evaluated, in no particular order (Moab: its read-time evaluation
    /// over every record, evaluated together first).
    fn each_listed(&self, now: Time, mut each: impl FnMut(JobPriority)) {
        let moab = self
            .queue
            .any_record()
            .is_some_and(|r| r.model() == PriorityModel::Moab);
        if moab {
            moab::evaluate(self.queue.records(), &self.queue.facts(), now)
                .into_iter()
                .for_each(each);
            return;
        }
        let table = self.queue.factor_table();
        for record in self.queue.records() {
            if let Some(job) = self.evaluate_with(record, Self::factor_in(&table, record), now) {
                each(job);
            }
        }
    }

    /// The oracle's `remember_incr_only` at `now`: each pending job's floor
    /// becomes the larger of it and its priority now; floors of jobs no
    /// longer queued are dropped; without Slurm's `INCR_ONLY` every floor is
    /// forgotten. `O(active jobs)`.
    pub fn remember_incr_only(&mut self, now: Time) {
        self.absorb();
        let on = self
            .queue
            .any_record()
            .is_some_and(PriorityRecord::incr_only);
        if !on {
            self.floors.clear();
            return;
        }
        let mut next: IncrFloors = BTreeMap::new();
        let table = self.queue.factor_table();
        for record in self.queue.records() {
            let name = self.name_of(record);
            let floor = self.floor_of(&name, record);
            let mut kept = floor;
            if let Some(p) = self.evaluate_with(record, Self::factor_in(&table, record), now) {
                if p.state == JobState::Pending {
                    kept = Some(floor.map_or(p.priority, |f| f.max(p.priority)));
                }
            }
            if let Some(value) = kept {
                if record.row.phase != Phase::Running {
                    next.insert(name.to_string(), (record.stay(), value));
                }
            }
        }
        self.floors = next;
    }

    /// The first `k` jobs of the ranked queue at `now`, exactly the oracle's
    /// `priority::queue(..)[..k]` (see the module documentation).
    ///
    /// After a batch that brought no fact, the read re-ranks the first jobs
    /// of the last read with the jobs changed since ([`kept`]) and searches
    /// only when that cannot prove the first `k`.
    pub fn top(&mut self, k: usize, now: Time) -> Vec<JobPriority> {
        self.absorb();
        if let Some(top) = self.top_from_kept(k, now) {
            self.kept_reads += 1;
            return top;
        }
        let (top, kept) = self.search_top(k, now);
        self.kept = kept;
        self.since_kept = kept::SinceKept::default();
        top
    }

    /// How many top reads were answered from the kept top.
    #[cfg(test)]
    pub(crate) fn kept_reads(&self) -> u64 {
        self.kept_reads
    }

    /// How the what-if tallies were counted so far.
    #[cfg(test)]
    pub(crate) fn tally_paths(&self) -> whatif::TallyPaths {
        self.tally_paths
    }

    /// What-if tallies read job by job from now on (the paths taken where
    /// the bounds do not count).
    #[cfg(test)]
    pub(crate) fn tally_job_by_job(&mut self) {
        self.tally_by_count = false;
    }

    /// The priority at or below which jobs are ordered by submit time alone
    /// (Slurm 1, Flux 0); `None` for the models whose reads evaluate every
    /// record (Moab, Slurm's `INCR_ONLY`) and for an empty queue.
    fn floor(&self) -> Option<u64> {
        let first = self.queue.any_record()?;
        if first.model() == PriorityModel::Moab || first.incr_only() {
            return None;
        }
        Some(queue_floor(first.model()))
    }

    /// The first `k` jobs at `now` by a search of the queue, with what the
    /// next read may keep of it ([`kept`]; `None` where the read filled
    /// from the floor or evaluated every record).
    fn search_top(&self, k: usize, now: Time) -> (Vec<JobPriority>, Option<kept::KeptTop>) {
        if k == 0 || self.queue.any_record().is_none() {
            return (Vec::new(), None);
        }
        let Some(floor) = self.floor() else {
            let mut all = self.listed_priorities(now);
            all.retain(|p| p.state == JobState::Pending);
            all.sort_by_cached_key(JobPriority::queue_key);
            all.truncate(k);
            return (all, None);
        };
        // Candidates are ranked by their priority alone (no factor list, no
        // key built); only the `k` returned are evaluated whole at the end.
        // The best `k + KEPT_SPARE` read are kept for the next read, and the
        // bounds of the others noted.
        let wanted = k.saturating_add(kept::KEPT_SPARE);
        let mut left_out = [f64::NEG_INFINITY; 2];
        let mut candidates = self.queue.candidates(now);
        let mut best: Vec<Ranked<'_>> = Vec::with_capacity(wanted.min(1024) + 1);
        while let Some(bound) = candidates.peek_bound() {
            if best.len() >= k {
                let kth = best[k - 1].priority;
                if kth > floor && bound < kth as f64 - 1.0 {
                    break;
                }
            }
            if bound < floor as f64 {
                // Every unread job is at the floor: fewer than `k` jobs are
                // above it, and `best` holds them all.
                best.truncate(k);
                let best = Self::evaluate_ranked(best, now);
                return (self.fill_from_floor(best, k, floor, now), None);
            }
            let Some((record, fairshare)) = candidates.next_candidate() else {
                break;
            };
            if let Some((_, candidate)) = self.rank(record, fairshare, now) {
                let at = best.partition_point(|kept| kept.cmp(&candidate).is_lt());
                if at < wanted {
                    best.insert(at, candidate);
                    if best.len() > wanted {
                        let dropped = best.pop().expect("longer than wanted");
                        kept::leave_out(&mut left_out, &dropped);
                    }
                } else {
                    kept::leave_out(&mut left_out, &candidate);
                }
            }
        }
        let unread = candidates.unread_key_bounds();
        let unread = [unread[0].max(left_out[0]), unread[1].max(left_out[1])];
        let kept = kept::KeptTop::new(now, k, best.iter(), unread);
        best.truncate(k);
        (Self::evaluate_ranked(best, now), Some(kept))
    }

    /// A candidate's state and its ranking at `now` with its user's factor
    /// (no factor list built).
    fn rank<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        now: Time,
    ) -> Option<(JobState, Ranked<'q>)> {
        let (state, priority) = record.priority_at(fairshare, now, None)?;
        let ranked = Ranked {
            priority,
            name: self.name_of(record),
            record,
            fairshare,
        };
        Some((state, ranked))
    }

    /// [`PriorityReader::rank`] with the candidate's whole evaluation
    /// (named, with its factor list) beside its ranking, from one
    /// evaluation: for a read that returns nearly every job it ranks.
    fn rank_whole<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        now: Time,
    ) -> Option<(Ranked<'q>, JobPriority)> {
        let name = self.name_of(record);
        let whole = record.evaluate(&name, fairshare, now, None)?;
        let ranked = Ranked {
            priority: whole.priority,
            name,
            record,
            fairshare,
        };
        Some((ranked, whole))
    }

    /// The ranked candidates evaluated whole, in their order.
    fn evaluate_ranked(best: Vec<Ranked<'_>>, now: Time) -> Vec<JobPriority> {
        best.into_iter()
            .filter_map(|ranked| {
                let p = ranked
                    .record
                    .evaluate(&ranked.name, ranked.fairshare, now, None)?;
                debug_assert_eq!(p.priority, ranked.priority, "the same bits both ways");
                Some(p)
            })
            .collect()
    }

    /// Every ranked job of this queue at `now` whose queue key is at most
    /// `target`'s (the target itself included when it is here), in queue
    /// order. A sharded queue answers for its shard, and the shards' answers
    /// merged are the whole queue's (the target may live on another shard).
    /// The same best-first search as [`PriorityReader::top`], stopped when
    /// the next bound cannot reach the target's priority instead of the
    /// `k`-th: `O(jobs read · log)`, where the jobs read are those ahead of
    /// it and the few whose bound ties with it; Moab and `INCR_ONLY` read
    /// every record.
    pub fn ahead_of(&mut self, target: &JobPriority, now: Time) -> Vec<JobPriority> {
        self.absorb();
        let Some(first) = self.queue.any_record() else {
            return Vec::new();
        };
        if first.model() == PriorityModel::Moab || first.incr_only() {
            // Moab's priorities (per-user running totals) and `INCR_ONLY`'s
            // floors are read over every record.
            let key = target.queue_key();
            let mut ahead = self.listed_priorities(now);
            ahead.retain(|p| p.state == JobState::Pending && p.queue_key() <= key);
            ahead.sort_by_cached_key(JobPriority::queue_key);
            return ahead;
        }
        let floor = queue_floor(first.model());
        // Candidates are ranked as in `compute_top` (no factor list); only
        // the jobs ahead are evaluated whole.
        let is_ahead = |candidate: &Ranked<'_>| {
            candidate
                .cmp_to(target.priority, target.submit_at, &target.job)
                .is_le()
        };
        let mut ahead: Vec<Ranked<'_>> = Vec::new();
        let reached_floor = walk_reachable(
            &self.queue,
            now,
            target.priority,
            floor,
            |record, fairshare| {
                if let Some((JobState::Pending, candidate)) = self.rank(record, fairshare, now) {
                    if is_ahead(&candidate) {
                        ahead.push(candidate);
                    }
                }
            },
        );
        if reached_floor && target.priority <= floor {
            // The job is at the floor: every job above it, then those at
            // the floor before it in submit order.
            ahead.retain(|candidate| candidate.priority > floor);
            let above: std::collections::HashSet<JobId> = ahead
                .iter()
                .map(|candidate| candidate.record.job())
                .collect();
            let last_second = ordered_submit(target.submit_at);
            for (second, id) in self.queue.by_submit() {
                if second > last_second {
                    break;
                }
                if above.contains(&id) {
                    continue;
                }
                let Some(record) = self.queue.record(id) else {
                    continue;
                };
                let fairshare = self.queue.fairshare_of(record.row.assoc);
                if let Some((JobState::Pending, candidate)) = self.rank(record, fairshare, now) {
                    if is_ahead(&candidate) {
                        ahead.push(candidate);
                    }
                }
            }
        }
        ahead.sort_by(Ranked::cmp);
        Self::evaluate_ranked(ahead, now)
    }

    /// What this shard holds (the worker and process left 0: the driver
    /// knows them), with this process's peak memory.
    pub fn holdings(&mut self) -> crate::cluster::ShardHoldings {
        self.absorb();
        let user_associations: std::collections::BTreeSet<AssocId> = self
            .queue
            .records()
            .map(|record| record.row.assoc)
            .collect();
        let mut combinations = 0;
        let mut last: Option<&Combo> = None;
        for (combo, _) in &self.combo_jobs {
            if last != Some(combo) {
                combinations += 1;
                last = Some(combo);
            }
        }
        crate::cluster::ShardHoldings {
            jobs: self.queue.len(),
            ranked: self.queue.ranked_len(),
            user_associations: user_associations.len(),
            combinations,
            peak_rss_kib: crate::cluster::own_status_kib("VmHWM").unwrap_or(0),
            ..Default::default()
        }
    }

    /// Complete `best` (every ranked job above the floor, fewer than `k`)
    /// with jobs at the floor in queue order (submit time, then job id),
    /// read from the submit-time order: `O(k + jobs above the floor)`.
    fn fill_from_floor(
        &self,
        mut best: Vec<JobPriority>,
        k: usize,
        floor: u64,
        now: Time,
    ) -> Vec<JobPriority> {
        best.retain(|p| p.priority > floor);
        let above: std::collections::BTreeSet<String> =
            best.iter().map(|p| p.job.clone()).collect();
        // Jobs submitted in the same second, ordered by job id when complete.
        let mut group: Vec<JobPriority> = Vec::new();
        let mut group_second: Option<u64> = None;
        let mut fifo = self.queue.by_submit();
        loop {
            let next = fifo.next();
            let second = next.map(|(second, _)| second);
            if second != group_second {
                group.sort_by_cached_key(JobPriority::queue_key);
                best.append(&mut group);
                if best.len() >= k {
                    break;
                }
                group_second = second;
            }
            let Some((_, job)) = next else {
                break;
            };
            let Some(record) = self.queue.record(job) else {
                continue;
            };
            if above.contains(&*self.name_of(record)) {
                continue;
            }
            if let Some(p) = self.evaluate(record, now) {
                group.push(p);
            }
        }
        best.truncate(k);
        best
    }
}

/// The lowest priority a ranked job of `model` can have (Slurm's 1, else 0):
/// the floor below which jobs are ordered by submit time alone.
fn queue_floor(model: PriorityModel) -> u64 {
    match model {
        PriorityModel::Slurm => 1,
        _ => 0,
    }
}

/// The best-first walk [`PriorityReader::ahead_of`] and
/// [`PriorityReader::count_ahead`] make: each candidate of `queue` at `now`
/// whose bound can reach a target of integer `priority`, handed to `visit`
/// in the search's order, until the next bound cannot reach it or is below
/// the model's `floor`. True when it stopped at the floor (every unread job
/// is at it).
fn walk_reachable<'q>(
    queue: &'q Queue,
    now: Time,
    priority: u64,
    floor: u64,
    mut visit: impl FnMut(&'q PriorityRecord, f64),
) -> bool {
    let mut candidates = queue.candidates(now);
    while let Some(bound) = candidates.peek_bound() {
        if priority > floor && bound < priority as f64 - 1.0 {
            return false;
        }
        if bound < floor as f64 {
            return true;
        }
        let Some((record, fairshare)) = candidates.next_candidate() else {
            return false;
        };
        visit(record, fairshare);
    }
    false
}
