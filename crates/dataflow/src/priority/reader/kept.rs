//! The kept top: the first jobs of the last top read, so that the next read
//! after a batch that changed only job records (a submit, a start, a hold,
//! a job's row leaving at its end) and the passing of time re-ranks them
//! with the jobs the batch changed, instead of searching the queue again.
//! PERF-CRITICAL: this is the read every single-event batch pays.
//!
//! # Why it is exact
//! A search ([`PriorityReader::search_top`]) stops when no unread job can
//! reach the `k`-th priority, and leaves, per rank class, an upper bound
//! *without the time shift* on every ranked job it did not keep
//! (`queue::Candidates::unread_key_bounds`, and the key bounds of the
//! candidates it read but did not keep). While no fact arrives (every fact
//! drops the kept top: a fair-share factor, a tree placement, the
//! configuration, a context), an unchanged record keeps its key and its
//! user keeps its factor, so at a later `now` each such job's exact sum is
//! at most its class's bound plus that class's time shift at `now`
//! (`Queue::time_shifts`: passing time moves every job of a class alike).
//! The jobs whose records were captured since (inserted, changed or
//! retracted) are evaluated exactly with the kept ones. So when, after
//! ranking the kept and changed jobs at `now`, the `k`-th has a priority
//! `p` above the model's floor and every class's shifted bound is below
//! `p - 1` (the search's own stopping rule: no truncated or rounded
//! priority of an unread job can reach `p`), the first `k` of that ranking
//! are the queue's first `k`. Otherwise the reader searches.
//!
//! # Cost
//! `O(kept + changed)` evaluations of records the last read touched (each
//! evaluated whole once: nearly all are returned), no heap and no walk down
//! the sorted tree; a search costs the same evaluations plus the walk to
//! each candidate.

use fairflow_model::report::JobPriority;
use fairflow_model::Time;

use super::{PriorityReader, Ranked};
use crate::priority::queue::{rank_class_index, Captured};
use crate::thresholds::{self, Threshold};
use crate::types::JobId;

/// How many jobs a kept top holds beyond the `k` it was read for (the
/// candidates a search read past the `k`-th, kept so a job leaving the top
/// need not trigger a search).
pub(super) const KEPT_SPARE: usize = 8;

/// Changed jobs past which the kept top is dropped (a search is cheaper
/// than evaluating them all).
const MAX_CHANGED_JOBS: usize = 4096;

/// The first jobs of the last read; see the module documentation.
#[derive(Debug)]
pub(super) struct KeptTop {
    /// The time of the read.
    now: Time,
    /// The `k` it was read for.
    k: usize,
    /// Jobs with their users' factors, in queue order at `now`.
    jobs: Vec<(JobId, f64)>,
    /// Per rank class, an upper bound without the time shift on every ranked
    /// job not in `jobs` (`-inf`: none).
    unread: [f64; 2],
}

/// What was absorbed since the kept top was read.
#[derive(Debug, Default)]
pub(super) struct SinceKept {
    facts: bool,
    jobs: Vec<JobId>,
}

impl KeptTop {
    /// A kept top of a search at `now` for `k`: the `ranked` jobs it read
    /// (in queue order) and the bounds of the rest.
    pub(super) fn new<'r, 'q: 'r>(
        now: Time,
        k: usize,
        ranked: impl ExactSizeIterator<Item = &'r Ranked<'q>>,
        unread: [f64; 2],
    ) -> Self {
        let wanted = k.saturating_add(KEPT_SPARE);
        let mut kept = KeptTop {
            now,
            k,
            jobs: Vec::with_capacity(ranked.len().min(wanted)),
            unread,
        };
        for (at, candidate) in ranked.enumerate() {
            if at < wanted {
                kept.jobs
                    .push((candidate.record.job(), candidate.fairshare));
            } else {
                leave_out(&mut kept.unread, candidate);
            }
        }
        kept
    }
}

/// Raise a class's bound of the jobs not kept to cover `candidate`.
pub(super) fn leave_out(unread: &mut [f64; 2], candidate: &Ranked<'_>) {
    if let Some(class) = rank_class_index(candidate.record) {
        let bound = candidate.record.key_with_fairshare(candidate.fairshare);
        unread[class] = unread[class].max(bound);
    }
}

impl SinceKept {
    /// Note what an absorb of `captured` changes, while a top is kept.
    pub(super) fn note(&mut self, kept: &mut Option<KeptTop>, captured: &Captured) {
        if kept.is_none() {
            return;
        }
        self.facts |= !captured.facts.is_empty();
        self.jobs
            .extend(captured.records.iter().map(|((job, _), _, _)| *job));
        let too_many = self.jobs.len() > MAX_CHANGED_JOBS;
        thresholds::decide(Threshold::KeptTopTooManyChanges, too_many);
        if self.facts || too_many {
            *kept = None;
            *self = SinceKept::default();
        }
    }
}

impl PriorityReader {
    /// The first `k` jobs at `now` from the kept top and the jobs changed
    /// since, when that is provably the queue's first `k` (see the module
    /// documentation); `None`: search. Consumes the kept top and keeps the
    /// new one.
    pub(super) fn top_from_kept(&mut self, k: usize, now: Time) -> Option<Vec<JobPriority>> {
        let kept = self.kept.take()?;
        let since = std::mem::take(&mut self.since_kept);
        if since.facts || k == 0 || k > kept.k || now < kept.now {
            return None;
        }
        // A kept top read for far more jobs than this read (`top -k ALL`,
        // the queue through a job) would be re-ranked whole for `k`: a
        // search reads `k` and the spare instead.
        if kept.jobs.len() > k.saturating_add(KEPT_SPARE + MAX_CHANGED_JOBS) {
            return None;
        }
        let floor = self.floor()?;
        let mut changed = since.jobs;
        changed.sort_unstable();
        changed.dedup();
        // Nearly every job ranked here is returned: each is evaluated whole
        // once, ranked by the priority of that evaluation (the same bits as
        // `PriorityRecord::priority_at`).
        let mut ranked: Vec<(Ranked<'_>, JobPriority)> =
            Vec::with_capacity(kept.jobs.len() + changed.len());
        for &(job, fairshare) in &kept.jobs {
            if changed.binary_search(&job).is_ok() {
                continue;
            }
            // Unchanged since the read: still ranked, with the same factor.
            let record = self.queue.record(job)?;
            ranked.push(self.rank_whole(record, fairshare, now)?);
        }
        for &job in &changed {
            let Some(record) = self.queue.record(job) else {
                continue;
            };
            if rank_class_index(record).is_none() {
                continue;
            }
            let fairshare = self.queue.fairshare_of(record.row.assoc);
            if let Some(both) = self.rank_whole(record, fairshare, now) {
                ranked.push(both);
            }
        }
        ranked.sort_by(|(a, _), (b, _)| a.cmp(b));
        let kth = ranked.get(k - 1)?.0.priority;
        let shifts = self.queue.time_shifts(now);
        let unread_now = (kept.unread[0] + shifts[0]).max(kept.unread[1] + shifts[1]);
        // The search's stopping rule (`search_top`), written the same way
        // (a NaN bound proves nothing).
        let proved = kth > floor && unread_now < kth as f64 - 1.0;
        if !proved {
            return None;
        }
        let next = KeptTop::new(now, kept.k, ranked.iter().map(|(r, _)| r), kept.unread);
        ranked.truncate(k);
        let top = ranked.into_iter().map(|(_, whole)| whole).collect();
        self.kept = Some(next);
        Some(top)
    }
}
