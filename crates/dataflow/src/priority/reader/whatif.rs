//! What one shard reads for a what-if answered from the live engine
//! (`Engine::whatif_rows`, `engine::whatif_live`): the jobs of the user
//! associations whose factor the proposal changes
//! ([`PriorityReader::jobs_of_assocs`]), and a tally of the other ranked
//! jobs against the changed jobs' keys ([`PriorityReader::tally_probes`]).
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
//! Cost: the jobs ahead of the last probe, each ranked by its integer
//! priority (the best-first walk of `count_ahead`, [`walk_reachable`]),
//! or, when a probe is at the model's floor (where the walk cannot stop),
//! every active job of the shard. Moab and Slurm's `INCR_ONLY` are not
//! tallied (`None`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use fairflow_model::report::{JobIdKey, JobPriority, JobState};
use fairflow_model::{PriorityModel, Time};

use super::{queue_floor, walk_reachable, PriorityReader};
use crate::priority::record::PriorityRecord;
use crate::types::{AssocId, JobId};

/// A changed job's key in queue order (priority descending, submit time,
/// job id as [`JobIdKey`] orders ids).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeKey {
    /// The priority.
    pub priority: u64,
    /// The submit time.
    pub submit_at: Time,
    /// The job id.
    pub job: String,
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

/// A kept moved job in the shard's bounded heap (the worst on top).
struct Kept<'q> {
    shift: u64,
    name: std::sync::Arc<str>,
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
    /// The jobs of this shard whose user association is in `assocs`
    /// (sorted), evaluated at `now`: every listed one (`O(active jobs)`
    /// lookups) with `all_listed`, else the ranked ones only (from each
    /// association's own set).
    pub fn jobs_of_assocs(
        &mut self,
        assocs: &[AssocId],
        all_listed: bool,
        now: Time,
    ) -> Vec<JobPriority> {
        self.absorb();
        if all_listed {
            return (self.queue.records())
                .filter(|record| assocs.binary_search(&record.row.assoc).is_ok())
                .filter_map(|record| self.evaluate(record, now))
                .collect();
        }
        (assocs.iter())
            .flat_map(|&assoc| self.queue.ranked_job_ids_of(assoc))
            .filter_map(|job| self.evaluate(self.queue.record(job)?, now))
            .collect()
    }

    /// The tally `request` asks for (see the module documentation); `None`
    /// under Moab and Slurm's `INCR_ONLY`.
    pub fn tally_probes(&mut self, request: &TallyRequest) -> Option<Tally> {
        self.absorb();
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
        let floor = queue_floor(first.model());
        let lowest = request.probes.iter().map(|p| p.priority).min();
        let mut kept: BinaryHeap<Kept<'_>> = BinaryHeap::new();
        let counts = &mut tally.counts;
        match lowest {
            // Every unread job is behind every probe: interval `len`.
            Some(lowest) if lowest > floor => {
                walk_reachable(
                    &self.queue,
                    request.now,
                    lowest,
                    floor,
                    |record, fairshare| {
                        self.tally_one(record, fairshare, request, counts, &mut kept);
                    },
                );
            }
            None => {}
            Some(_) => {
                let table = self.queue.factor_table();
                for record in self.queue.records() {
                    let fairshare = Self::factor_in(&table, record);
                    self.tally_one(record, fairshare, request, counts, &mut kept);
                }
            }
        }
        let mut moved: Vec<Kept<'_>> = kept.into_vec();
        moved.sort();
        tally.moved = moved
            .into_iter()
            .filter_map(|kept| {
                let job = self.evaluate_with(kept.record, kept.fairshare, request.now)?;
                Some((kept.at, job))
            })
            .collect();
        Some(tally)
    }

    /// Tally one record: a ranked job not left out is counted in its
    /// interval and, when the interval moves, offered to the kept jobs.
    fn tally_one<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        request: &TallyRequest,
        counts: &mut [u64],
        kept: &mut BinaryHeap<Kept<'q>>,
    ) {
        if request.excluded.binary_search(&record.job()).is_ok() {
            return;
        }
        let Some((JobState::Pending, priority)) = record.priority_at(fairshare, request.now, None)
        else {
            return;
        };
        let submit_at = record.row.submit_at;
        let mut name = None;
        let at = request.probes.partition_point(|probe| {
            let first = priority
                .cmp(&probe.priority)
                .then(probe.submit_at.cmp(&submit_at));
            if first != Ordering::Equal {
                return first.is_lt();
            }
            let name = name.get_or_insert_with(|| self.name_of(record));
            JobIdKey::compare(&probe.job, name).is_lt()
        });
        counts[at] += 1;
        let shift = request.shifts[at].unsigned_abs();
        if shift == 0 || request.keep == 0 {
            return;
        }
        if kept.len() >= request.keep && kept.peek().is_some_and(|worst| worst.shift > shift) {
            return;
        }
        let name = name.unwrap_or_else(|| self.name_of(record));
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
