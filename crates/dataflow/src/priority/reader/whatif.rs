//! What one shard reads for a what-if answered from the live engine
//! (`Engine::whatif_rows`, `engine::whatif_live`): the jobs of the user
//! associations whose factor the proposal changes, each keyed with the
//! factor before and after ([`PriorityReader::trial_jobs`]), and a tally of
//! the other ranked jobs against the changed jobs' keys
//! ([`PriorityReader::tally_probes`]).
//!
//! The changed jobs' keys before and after (the *probes*, in queue order)
//! cut the queue into intervals; every job whose priority does not change
//! keeps its key, and moves by the same number of places as every other
//! unchanged job of its interval: the changed jobs whose key is ahead of the
//! interval after, less those ahead of it before (the interval's *shift*).
//! The tally counts the unchanged ranked jobs of each interval and keeps the
//! `k` that move most (largest shift, then job id as strings order), so
//! the driver places every changed job and names the unchanged jobs a
//! `k`-row answer shows without reading the queue's order itself.
//!
//! Cost, under Slurm's model: one count of the window of priorities the
//! probes span (`Queue::count_window`, as a page of `top --offset` is
//! counted): the jobs above the highest probe counted from bounds, whole
//! per sorted vector or subtree, into the first interval (none of them is
//! changed: a changed ranked job's key is a probe), and only the band that
//! may lie inside the window evaluated and tallied. A share change moves
//! the jobs of its users' accounts within the range of their other
//! factors, so the window is a few percent of the queue's priorities
//! wherever it lies. Where the bounds do not count (Flux, a bound that
//! does not hold at `now`): the jobs ahead of the last probe, each ranked
//! by its integer priority (the best-first walk of `count_ahead`,
//! [`walk_reachable`]), or every active job of the shard in one pass, when
//! a probe is at the model's floor (where the walk cannot stop) or when a
//! sample of the records puts a quarter of them or more ahead of the last
//! probe (a walked job costs about four passed ones: [`SCAN_FROM_SHARE`]).
//! Moab and Slurm's `INCR_ONLY` are not tallied (`None`). Every path
//! leaves uncounted the jobs behind the last probe that it does not read
//! (the last interval's shift is 0: each changed ranked job has a probe on
//! each side).
//!
//! The driver's second tally (the places of the kept moved jobs, all of
//! which the first one counted) is answered from the keys the first one
//! kept ([`TalliedKeys`]: 24 bytes per counted job, held until the next
//! tally or update): one comparison pass over those keys instead of a
//! second walk of the queue.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use rayon::prelude::*;

use fairflow_model::report::{JobIdOrder, JobPriority, JobState};
use fairflow_model::{PriorityModel, Time};

use super::factors::TrialFactor;
use super::{queue_floor, walk_reachable, PriorityReader};
use crate::names::JobNames;
use crate::priority::queue::Counted;
use crate::priority::record::PriorityRecord;
use crate::types::{AssocId, JobId, JobIdSet};
use intervals::{interval_of, ProbeIndex};

mod band;
mod intervals;

/// A changed job's key in queue order (priority descending, submit time,
/// job id as [`JobIdKey`] orders ids).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeKey {
    /// The priority.
    pub priority: u64,
    /// The submit time.
    pub submit_at: Time,
    /// The job.
    pub job: ProbeJob,
}

/// A probe's job, by which a tie of priority and submit time is decided.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ProbeJob {
    /// The number of its plain id (`JobIdOrder::plain_number`): all a tie
    /// asks, in any process.
    Number(u64),
    /// Its id (not plain), named only where a tie asks, from the names
    /// table the readers of one process share (it holds every job there).
    Id(JobId),
    /// Its name: between processes (each holds only its own jobs' names),
    /// and for jobs the driver knows by name.
    Name(Arc<str>),
}

impl ProbeKey {
    /// The probe's job's id order (`""` for an id the table no longer has).
    pub fn order(&self, names: &JobNames) -> JobIdOrder {
        match &self.job {
            ProbeJob::Number(number) => JobIdOrder::Number(*number),
            ProbeJob::Id(id) => names.order(*id),
            ProbeJob::Name(name) => JobIdOrder::of(name),
        }
    }
}

/// A job whose priority a trial moves, keyed on both sides
/// ([`PriorityReader::trial_jobs`]): by id, unnamed (the driver names the
/// rows it shows and the probes a tie asks for).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrialJob {
    /// Its id.
    pub id: JobId,
    /// Its id's number when the id is plain, else 0 (`JobRow::id_number`).
    pub id_number: u64,
    /// Its submit time.
    pub submit_at: Time,
    /// Its state (the same on both sides: a share moves no job's state).
    pub state: JobState,
    /// Its priority with its user's live factor.
    pub priority_before: u64,
    /// Its priority with the trial's factor.
    pub priority_after: u64,
}

/// What [`PriorityReader::tally_probes`] is asked: the probes in queue
/// order, each interval's shift (`probes.len() + 1` of them: interval `i`
/// holds the jobs with `i` probes ahead), the jobs not tallied (the changed
/// ones, sorted), how many moved jobs to keep, and the time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TallyRequest {
    /// The probes, in queue order.
    pub probes: Vec<ProbeKey>,
    /// Each interval's shift (places lost: after minus before).
    pub shifts: Vec<i64>,
    /// Jobs left out of the tally, sorted.
    pub excluded: Vec<JobId>,
    /// Whether every excluded ranked job's key is one of the probes (the
    /// first tally's: then none is above the probes' window, and the count
    /// of the window has none to take back).
    pub excluded_are_probes: bool,
    /// How many moved jobs to keep.
    pub keep: usize,
    /// The time.
    pub now: Time,
}

/// One shard's (or every shard's, merged) tally. (Between processes it
/// travels as its parts, the jobs as the shards send jobs:
/// `worker::shards`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Ranked jobs tallied in each interval.
    pub counts: Vec<u64>,
    /// The kept jobs that move, each with its interval, best first
    /// (largest shift, then job id as strings order).
    pub moved: Vec<(u64, JobPriority)>,
}

impl Tally {
    /// The shards' tallies together: counts summed, the kept jobs merged
    /// and cut at `keep`.
    pub fn merge(all: Vec<Tally>, shifts: &[i64], keep: usize) -> Tally {
        let mut merged = Tally {
            counts: vec![0; shifts.len()],
            moved: Vec::new(),
        };
        for tally in all {
            for (sum, count) in merged.counts.iter_mut().zip(tally.counts) {
                *sum += count;
            }
            merged.moved.extend(tally.moved);
        }
        merged
            .moved
            .sort_by(|(a_at, a), (b_at, b)| moved_order(shifts, *a_at, &a.job, *b_at, &b.job));
        merged.moved.truncate(keep);
        merged
    }
}

/// The answer's order of unchanged jobs that move: the larger shift first,
/// then the job id as strings order.
fn moved_order(shifts: &[i64], a_at: u64, a: &str, b_at: u64, b: &str) -> Ordering {
    let shift = |at: u64| shifts[at as usize].unsigned_abs();
    shift(b_at).cmp(&shift(a_at)).then_with(|| a.cmp(b))
}

/// A tally under way: the counts, the kept moved jobs, and the counted
/// jobs' keys when they are kept for a second tally ([`TalliedKeys`]).
struct Tallying<'c, 'q> {
    counts: &'c mut [u64],
    kept: BinaryHeap<Kept<'q>>,
    keys: Option<Vec<(u64, Time, JobId)>>,
    /// Jobs counted into the first interval without a key.
    above: u64,
}

impl<'c> Tallying<'c, '_> {
    /// A tally of `request` into `counts`, `above` jobs already counted
    /// into the first interval; room for `expected` keys when it keeps them.
    fn new(request: &TallyRequest, counts: &'c mut [u64], expected: usize, above: u64) -> Self {
        Tallying {
            counts,
            kept: BinaryHeap::new(),
            keys: (request.keep > 0).then(|| Vec::with_capacity(expected)),
            above,
        }
    }
}

/// The keys (priority, submit time, job) of every job the last tally that
/// kept moved jobs counted: the driver's next tally asks for the kept jobs'
/// places (the unchanged jobs ahead of each), and those jobs were all
/// counted, so that tally is answered from the keys, without a second walk
/// of the queue. Kept by the reader until its next tally or until it
/// absorbs an update (which may move any key).
pub(super) struct TalliedKeys {
    now: Time,
    excluded: Vec<JobId>,
    /// Every ranked job of priority in this range (inclusive) was counted.
    counted: (u64, u64),
    /// The jobs counted above the range, not keyed (ahead of every key).
    above: u64,
    keys: Vec<(u64, Time, JobId)>,
}

impl TalliedKeys {
    /// Whether `request` is answered from these keys: places only, at the
    /// same time, the same jobs left out, every probe in the range of
    /// priorities in which every job was counted (so are the jobs ahead of
    /// it: keyed, or above the range).
    fn answers(&self, request: &TallyRequest) -> bool {
        let (from, to) = self.counted;
        request.keep == 0
            && request.now == self.now
            && request.excluded == self.excluded
            && (request.probes.iter()).all(|probe| (from..=to).contains(&probe.priority))
    }

    /// The counts of `request`'s intervals (the last one, behind every
    /// probe, holds only the counted jobs there, as a walk's does).
    fn count(&self, request: &TallyRequest, names: &JobNames) -> Vec<u64> {
        let mut counts = vec![0; request.probes.len() + 1];
        counts[0] = self.above;
        for &(priority, submit_at, job) in &self.keys {
            let at = interval_of(&request.probes, names, priority, submit_at, || {
                names.order(job)
            });
            counts[at] += 1;
        }
        counts
    }
}

/// Records sampled to choose between the walk and the pass over every
/// record.
const DEPTH_SAMPLE: usize = 1024;

/// The share of the active jobs ahead of the lowest probe from which one
/// pass over every record costs less than the best-first walk down to it:
/// at 100,000 associations and 1,000,000 jobs a walked job cost about four
/// times a passed one (`perf/results/2026-12-01-whatif-trial-s36.md`).
const SCAN_FROM_SHARE: f64 = 0.25;

/// What a sample found ahead of the lowest probe.
#[derive(Debug, Clone, Copy, Default)]
struct Ahead {
    /// Records sampled.
    sampled: u64,
    /// Of those, ranked with a priority at least the lowest probe's.
    ahead: u64,
}

impl Ahead {
    /// Does one pass over every record cost less than the walk?
    fn scan_is_cheaper(self) -> bool {
        self.sampled > 0 && self.ahead as f64 >= SCAN_FROM_SHARE * self.sampled as f64
    }

    /// The estimated number of jobs ahead, of `queue`'s active ones.
    fn jobs(self, queue: &crate::priority::queue::Queue) -> usize {
        (queue.len() as u64 * self.ahead / self.sampled.max(1)) as usize
    }
}

/// How a reader's what-if tallies were counted (for tests).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TallyPaths {
    /// By one pass over every record (not the walk).
    pub scanned: u64,
    /// From the last tally's keys.
    pub keyed: u64,
    /// By a count of the probes' window of priorities (not read job by job).
    pub windowed: u64,
}

/// How a tally read the queue.
enum Path {
    /// A count of the probes' window.
    Windowed,
    /// One pass over every record.
    Scanned,
    /// The best-first walk down to the lowest probe.
    Walked,
}

/// A kept moved job in the shard's bounded heap (the worst on top).
struct Kept<'q> {
    shift: u64,
    name: Arc<str>,
    at: u64,
    record: &'q PriorityRecord,
    fairshare: f64,
}

impl Kept<'_> {
    fn order(&self, other: &Self) -> Ordering {
        other
            .shift
            .cmp(&self.shift)
            .then_with(|| self.name.cmp(&other.name))
    }
}

impl PartialEq for Kept<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.order(other) == Ordering::Equal
    }
}
impl Eq for Kept<'_> {}
impl PartialOrd for Kept<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Kept<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order(other)
    }
}

impl PriorityReader {
    /// The jobs of this shard whose user association's factor a trial
    /// changed (`factors`, sorted by association) and whose priority moves
    /// with it, keyed on both sides at `now` ([`TrialJob`]): each evaluated
    /// twice from its one record (the same bits as its evaluation,
    /// `priority_at`), with its user's live factor and with the trial's (a
    /// share changes no record, only factors), on every core; no name,
    /// owner, factor or pair: the driver names only what it shows or a tie
    /// asks for. Not under `INCR_ONLY` (no floor), which the what-if does
    /// not take. Every listed one (`O(active jobs)` lookups) with
    /// `all_listed`, else the ranked ones only (from each association's own
    /// set).
    pub fn trial_jobs(
        &mut self,
        factors: &[TrialFactor],
        all_listed: bool,
        now: Time,
    ) -> Vec<TrialJob> {
        self.absorb();
        let sides: Vec<(AssocId, f64, f64)> = (factors.iter())
            .map(|&(assoc, _, after)| (assoc, self.queue.fairshare_of(assoc), after.unwrap_or(0.0)))
            .collect();
        let keyed = |(record, before, after): (&PriorityRecord, f64, f64)| {
            let (state, priority_before) = record.priority_at(before, now, None)?;
            let (_, priority_after) = record.priority_at(after, now, None)?;
            (priority_before != priority_after).then_some(TrialJob {
                id: record.job(),
                id_number: record.row.id_number,
                submit_at: record.row.submit_at,
                state,
                priority_before,
                priority_after,
            })
        };
        if all_listed {
            let side_of = |assoc: AssocId| {
                let at = sides.binary_search_by_key(&assoc, |side| side.0).ok()?;
                Some((sides[at].1, sides[at].2))
            };
            let listed: Vec<(&PriorityRecord, f64, f64)> = (self.queue.records())
                .filter_map(|record| {
                    let (before, after) = side_of(record.row.assoc)?;
                    Some((record, before, after))
                })
                .collect();
            return listed.into_par_iter().filter_map(keyed).collect();
        }
        let queue = &self.queue;
        (sides.par_iter())
            .flat_map_iter(|&(assoc, before, after)| {
                (queue.ranked_job_ids_of(assoc))
                    .filter_map(move |job| keyed((queue.record(job)?, before, after)))
            })
            .collect()
    }

    /// The tally `request` asks for (see the module documentation); `None`
    /// under Moab and Slurm's `INCR_ONLY`. A request for places only
    /// (`keep` 0) of jobs the last tally counted, nothing absorbed since, is
    /// counted from that tally's keys ([`TalliedKeys`]) without reading the
    /// queue again.
    pub fn tally_probes(&mut self, request: &TallyRequest) -> Option<Tally> {
        self.absorb();
        let last = self.tallied.take();
        let mut tally = Tally {
            counts: vec![0; request.probes.len() + 1],
            moved: Vec::new(),
        };
        let Some(first) = self.queue.any_record() else {
            return Some(tally);
        };
        if first.model() == PriorityModel::Moab || first.incr_only() {
            return None;
        }
        if let Some(last) = last.filter(|last| last.answers(request)) {
            tally.counts = last.count(request, &self.names);
            self.tally_paths.keyed += 1;
            return Some(tally);
        }
        let lowest = request.probes.iter().map(|p| p.priority).min();
        let highest = request.probes.iter().map(|p| p.priority).max();
        let window = lowest.zip(highest);
        let excluded = JobIdSet::of(&request.excluded);
        // The first tally's excluded jobs are all inside the window: left
        // out of the count's band (a later tally finds them there).
        let left_out = request.excluded_are_probes.then_some(&excluded);
        let counted = (window.filter(|_| self.tally_by_count))
            .and_then(|window| self.counted(window, request.now, left_out));
        // `range`: the priorities in which every ranked job was counted.
        let (mut tallying, range, path) = match (counted, window) {
            (Some(counted), Some(window)) => {
                let tallying =
                    self.tally_window(counted, window, (request, &excluded), &mut tally.counts);
                (tallying, window, Path::Windowed)
            }
            _ => {
                let (tallying, range, scanned) =
                    self.tally_read((request, &excluded), lowest, &mut tally.counts);
                let path = if scanned { Path::Scanned } else { Path::Walked };
                (tallying, range, path)
            }
        };
        let above = tallying.above;
        let mut moved: Vec<Kept<'_>> = std::mem::take(&mut tallying.kept).into_vec();
        moved.sort();
        tally.moved = moved
            .into_iter()
            .filter_map(|kept| {
                let job = self.evaluate_with(kept.record, kept.fairshare, request.now)?;
                Some((kept.at, job))
            })
            .collect();
        self.tallied = tallying.keys.take().map(|keys| TalliedKeys {
            now: request.now,
            excluded: request.excluded.clone(),
            counted: range,
            above,
            keys,
        });
        match path {
            Path::Windowed => self.tally_paths.windowed += 1,
            Path::Scanned => self.tally_paths.scanned += 1,
            Path::Walked => {}
        }
        Some(tally)
    }

    /// The tally from a count of the probes' window `(low, high)` of
    /// priorities: the jobs above it counted (into the first interval; the
    /// excluded among them taken back out), those of the band that are not
    /// below it tallied one by one.
    fn tally_window<'q, 'c>(
        &'q self,
        counted: Counted<'q>,
        (low, high): (u64, u64),
        (request, excluded): (&'c TallyRequest, &JobIdSet),
        counts: &'c mut [u64],
    ) -> Tallying<'c, 'q> {
        let above = counted.whole
            + (counted.sure.iter())
                .map(|p| p.jobs.len() as u64)
                .sum::<u64>();
        let above = above - self.excluded_counted_above(&counted, high, (request, excluded));
        counts[0] += above;
        let mut tallying = Tallying::new(request, counts, counted.band.len(), above);
        let keys = band::sorted_keys(&counted.band, excluded, low, request.now);
        band::place_sorted(
            (&request.probes, &self.names),
            &keys,
            |key| (self.names).order_of(key.record.job(), key.record.row.id_number),
            |key, at| {
                let evaluated = (key.job, key.priority, key.submit_at, at);
                self.enter(key.record, key.fairshare, evaluated, request, &mut tallying);
            },
        );
        tallying
    }

    /// How many of `request`'s excluded jobs (of this shard, ranked, above
    /// `high` at the time) `counted` counted above its window: those not in
    /// its band. (A changed job's key is a probe of the first tally, so
    /// none is there; the places tally's probes are other jobs.)
    fn excluded_counted_above(
        &self,
        counted: &Counted<'_>,
        high: u64,
        (request, excluded): (&TallyRequest, &JobIdSet),
    ) -> u64 {
        if request.excluded_are_probes {
            return 0;
        }
        let above = |record: &PriorityRecord, factor: f64| {
            matches!(record.priority_at(factor, request.now, None),
                Some((JobState::Pending, priority)) if priority > high)
        };
        let excluded_above = (request.excluded.iter())
            .filter_map(|&job| self.queue.record(job))
            .filter(|record| above(record, self.queue.fairshare_of(record.row.assoc)))
            .count();
        if excluded_above == 0 {
            return 0;
        }
        let in_band = (counted.band.iter())
            .filter(|(record, _)| excluded.contains(record.job()))
            .filter(|&&(record, factor)| above(record, factor))
            .count();
        (excluded_above - in_band) as u64
    }

    /// The tally read job by job (where the bounds do not count): the walk
    /// down to the lowest probe, or one pass over every record; with the
    /// range of priorities in which every job was counted and whether every
    /// record was passed.
    fn tally_read<'q, 'c>(
        &'q self,
        (request, excluded): (&'c TallyRequest, &JobIdSet),
        lowest: Option<u64>,
        counts: &'c mut [u64],
    ) -> (Tallying<'c, 'q>, (u64, u64), bool) {
        let floor = self
            .queue
            .any_record()
            .map_or(0, |r| queue_floor(r.model()));
        let ahead = (lowest.filter(|&lowest| lowest > floor))
            .map(|lowest| self.estimate_ahead(lowest, request.now));
        let scan = match lowest {
            None => false,
            Some(lowest) if lowest <= floor => true,
            Some(_) => ahead.is_some_and(Ahead::scan_is_cheaper),
        };
        let expected = match (scan, ahead) {
            (true, _) => self.queue.ranked_len(),
            (false, ahead) => ahead.map_or(0, |a| a.jobs(&self.queue)),
        };
        let mut tallying = Tallying::new(request, counts, expected, 0);
        let index = ProbeIndex::new(&request.probes, &self.names);
        let counted_from = match lowest {
            None => u64::MAX,
            // Every unread job is behind every probe: interval `len`.
            Some(lowest) if !scan => {
                walk_reachable(
                    &self.queue,
                    request.now,
                    lowest,
                    floor,
                    |record, fairshare| {
                        let probes = (request, &index, excluded);
                        self.tally_one(record, fairshare, probes, &mut tallying)
                    },
                );
                lowest
            }
            // At the floor (where the walk cannot stop) or deep in the
            // queue (where one pass over every record costs less).
            Some(_) => {
                let table = self.queue.factor_table();
                for record in self.queue.records() {
                    let fairshare = Self::factor_in(&table, record);
                    let probes = (request, &index, excluded);
                    self.tally_one(record, fairshare, probes, &mut tallying);
                }
                0
            }
        };
        (tallying, (counted_from, u64::MAX), scan)
    }

    /// How many of a sample of [`DEPTH_SAMPLE`] records spread over the ids
    /// are ranked with a priority at `now` of at least `lowest` (each
    /// evaluated with its user's factor).
    fn estimate_ahead(&self, lowest: u64, now: Time) -> Ahead {
        let mut ahead = Ahead::default();
        for record in self.queue.sample_records(DEPTH_SAMPLE) {
            ahead.sampled += 1;
            let factor = self.queue.fairshare_of(record.row.assoc);
            if let Some((JobState::Pending, priority)) = record.priority_at(factor, now, None) {
                ahead.ahead += u64::from(priority >= lowest);
            }
        }
        ahead
    }

    /// Tally one record: a ranked job not left out (`excluded`: the
    /// request's, as bits) is placed among the request's probes (`index`)
    /// and entered ([`PriorityReader::enter`]).
    fn tally_one<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        (request, index, excluded): (&TallyRequest, &ProbeIndex<'_>, &JobIdSet),
        tallying: &mut Tallying<'_, 'q>,
    ) {
        if excluded.contains(record.job()) {
            return;
        }
        let Some((JobState::Pending, priority)) = record.priority_at(fairshare, request.now, None)
        else {
            return;
        };
        let submit_at = record.row.submit_at;
        let order = || self.names.order_of(record.job(), record.row.id_number);
        let at = index.interval(priority, submit_at, order);
        self.enter(
            record,
            fairshare,
            (record.job(), priority, submit_at, at),
            request,
            tallying,
        );
    }

    /// Enter a ranked job not left out, of `(job, priority, submit time,
    /// interval)` (its record not read here: a kept job's is evaluated once
    /// the tally is done): counted in its interval (its key kept when the
    /// tally keeps keys) and, when the interval moves, offered to the kept
    /// jobs (named by id).
    fn enter<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        (job, priority, submit_at, at): (JobId, u64, Time, usize),
        request: &TallyRequest,
        tallying: &mut Tallying<'_, 'q>,
    ) {
        tallying.counts[at] += 1;
        if let Some(keys) = tallying.keys.as_mut() {
            keys.push((priority, submit_at, job));
        }
        let kept = &mut tallying.kept;
        let shift = request.shifts[at].unsigned_abs();
        if shift == 0 || request.keep == 0 {
            return;
        }
        if kept.len() >= request.keep && kept.peek().is_some_and(|worst| worst.shift > shift) {
            return;
        }
        let name = self.name_of_job(job);
        // Full, and no better than the worst kept (an equal shift and a
        // name that sorts after): not kept.
        if kept.len() >= request.keep
            && (kept.peek()).is_some_and(|worst| worst.shift == shift && worst.name <= name)
        {
            return;
        }
        kept.push(Kept {
            shift,
            name,
            at: at as u64,
            record,
            fairshare,
        });
        if kept.len() > request.keep {
            kept.pop();
        }
    }
}
