//! A job's place in line counted, not built (`PriorityReader::count_ahead`):
//! what `fairflow_model::report::Position` needs of the jobs ahead of a
//! target (how many, how many of each account, how many in the target's
//! partition, and the one just ahead) from one shard's queue, without
//! materialising any of them but the one just ahead.
//!
//! The jobs ahead are found as [`PriorityReader::ahead_of`] finds them (the
//! best-first search of the queue, stopped where no unread bound can reach
//! the target's priority; at the model's floor, the submit-time order up to
//! the target's second), in the same queue order (integer priority
//! descending, submit time, job id as [`JobIdKey`] orders ids). Each is
//! ranked by its integer priority alone ([`PriorityRecord::priority_at`]:
//! no factor list, no name unless priority and submit time tie with the
//! target or the job just ahead) and counted by its row's ids; names are
//! resolved once, for the answer, by the driver. Cost: `O(jobs ahead ·
//! (log + one priority))`; Moab and Slurm's `INCR_ONLY` are not counted
//! here (`None`: their priorities are read over every record, the driver
//! reads them the slow way).
//!
//! Under Slurm's model, for a target above the floor, the jobs ahead are
//! first counted from bounds instead (`bounded`: per user, account and
//! partition, or under Fair Tree per group of users, account and
//! partition, the jobs surely above the target's priority counted whole,
//! only the band at its priority evaluated); the search above is the
//! fallback where the bounds do not hold.

use std::cmp::Ordering;

use fairflow_model::report::{JobIdKey, JobPriority, JobState};
use fairflow_model::{PriorityModel, Time};

use super::{queue_floor, walk_reachable, PriorityReader};
use crate::priority::inputs::ordered_submit;
use crate::priority::record::PriorityRecord;
use crate::thresholds::{self, Threshold};
use crate::types::{grow, AccountId, JobId, NameId};

mod bounded;

/// What one shard counted ahead of a target job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AheadCounts {
    /// The ranked jobs ahead of the target (the target not included).
    pub ahead: u64,
    /// Of those, how many of each account (non-zero counts, by id).
    pub by_account: Vec<(AccountId, u64)>,
    /// Of those, how many in the target's partition.
    pub in_partition: u64,
    /// The last of them in queue order, evaluated whole (named by its job
    /// only, as the shards name results).
    pub just_ahead: Option<JobPriority>,
}

impl AheadCounts {
    /// The shards' counts together (a job is on one shard): sums, and the
    /// latest of their jobs just ahead in queue order.
    pub fn merge(all: impl IntoIterator<Item = AheadCounts>) -> AheadCounts {
        let mut merged = AheadCounts::default();
        for counts in all {
            merged.ahead += counts.ahead;
            merged.in_partition += counts.in_partition;
            merged.by_account.extend(counts.by_account);
            let later = match (&merged.just_ahead, &counts.just_ahead) {
                (Some(kept), Some(other)) => other.queue_key() > kept.queue_key(),
                (None, Some(_)) => true,
                _ => false,
            };
            if later {
                merged.just_ahead = counts.just_ahead;
            }
        }
        merged.by_account.sort_unstable();
        let mut summed: Vec<(AccountId, u64)> = Vec::with_capacity(merged.by_account.len());
        for (account, count) in merged.by_account {
            match summed.last_mut() {
                Some((last, sum)) if *last == account => *sum += count,
                _ => summed.push((account, count)),
            }
        }
        merged.by_account = summed;
        merged
    }
}

/// The job whose place is counted.
pub struct Target<'a> {
    /// Its id (it is not counted ahead of itself).
    pub job: JobId,
    /// Its priority (the queue order's first key).
    pub priority: u64,
    /// Its submit time (the second).
    pub submit_at: Time,
    /// Its name (the third, as [`JobIdKey`] orders ids).
    pub name: &'a str,
    /// Its partition (the partition rank counts the jobs ahead there).
    pub partition: NameId,
}

/// A counted job, ranked by its integer priority.
#[derive(Clone, Copy)]
struct Seen<'q> {
    record: &'q PriorityRecord,
    fairshare: f64,
    priority: u64,
}

/// The counts being made (see [`AheadCounts`]), accounts by dense id.
#[derive(Default)]
struct Tally<'q> {
    ahead: u64,
    by_account: Vec<u64>,
    in_partition: u64,
    last: Option<Seen<'q>>,
}

impl PriorityReader {
    /// The counts of the ranked jobs of this shard ahead of `target` at
    /// `now` (see the module documentation); `None` under Moab and Slurm's
    /// `INCR_ONLY`, whose reads evaluate every record.
    pub fn count_ahead(&mut self, target: &Target<'_>, now: Time) -> Option<AheadCounts> {
        self.absorb();
        let Some(first) = self.queue.any_record() else {
            return Some(AheadCounts::default());
        };
        if first.model() == PriorityModel::Moab || first.incr_only() {
            return None;
        }
        let bounded = self.count_ahead_bounded(target, now);
        thresholds::decide(Threshold::PlaceFromBounds, bounded.is_some());
        if bounded.is_some() {
            return bounded;
        }
        let floor = queue_floor(first.model());
        // Jobs above the floor and the others apart: at the floor the
        // others are read again in submit order.
        let mut above = Tally::default();
        let mut low = Tally::default();
        let reached_floor = walk_reachable(
            &self.queue,
            now,
            target.priority,
            floor,
            |record, fairshare| {
                if let Some(seen) = self.seen_ahead(record, fairshare, now, target) {
                    let tally = if seen.priority > floor {
                        &mut above
                    } else {
                        &mut low
                    };
                    self.add(tally, seen, target);
                }
            },
        );
        if reached_floor && target.priority <= floor {
            self.count_at_floor(&mut above, floor, now, target);
        } else {
            self.merge_tally(&mut above, low);
        }
        Some(self.finish(above, now))
    }

    /// The jobs at the floor ahead of a target at the floor: those before
    /// it in submit order (then by id), read from the submit-time order.
    fn count_at_floor<'q>(
        &'q self,
        tally: &mut Tally<'q>,
        floor: u64,
        now: Time,
        target: &Target<'_>,
    ) {
        let last_second = ordered_submit(target.submit_at);
        for (second, id) in self.queue.by_submit() {
            if second > last_second {
                break;
            }
            let Some(record) = self.queue.record(id) else {
                continue;
            };
            let fairshare = self.queue.fairshare_of(record.row.assoc);
            if let Some(seen) = self.seen_ahead(record, fairshare, now, target) {
                // Those above the floor were counted by the search.
                if seen.priority <= floor {
                    self.add(tally, seen, target);
                }
            }
        }
    }

    /// The record ranked at `now` when it is a pending job ahead of the
    /// target (not the target itself).
    fn seen_ahead<'q>(
        &self,
        record: &'q PriorityRecord,
        fairshare: f64,
        now: Time,
        target: &Target<'_>,
    ) -> Option<Seen<'q>> {
        if record.job() == target.job {
            return None;
        }
        let (JobState::Pending, priority) = record.priority_at(fairshare, now, None)? else {
            return None;
        };
        let ahead = target
            .priority
            .cmp(&priority)
            .then(record.row.submit_at.cmp(&target.submit_at))
            .then_with(|| JobIdKey::compare(&self.name_of(record), target.name))
            .is_lt();
        ahead.then_some(Seen {
            record,
            fairshare,
            priority,
        })
    }

    /// Queue order between two counted jobs (`Less`: `a` first).
    fn queue_order(&self, a: &Seen<'_>, b: &Seen<'_>) -> Ordering {
        b.priority
            .cmp(&a.priority)
            .then(a.record.row.submit_at.cmp(&b.record.row.submit_at))
            .then_with(|| JobIdKey::compare(&self.name_of(a.record), &self.name_of(b.record)))
    }

    /// Count one job ahead.
    fn add<'q>(&self, tally: &mut Tally<'q>, seen: Seen<'q>, target: &Target<'_>) {
        let row = &seen.record.row;
        tally.ahead += 1;
        *grow(&mut tally.by_account, row.account as usize) += 1;
        if row.partition == target.partition {
            tally.in_partition += 1;
        }
        self.keep_later(&mut tally.last, seen);
    }

    /// Keep the later of `kept` and `seen` in queue order.
    fn keep_later<'q>(&self, kept: &mut Option<Seen<'q>>, seen: Seen<'q>) {
        let later = kept
            .as_ref()
            .is_none_or(|last| self.queue_order(&seen, last).is_gt());
        if later {
            *kept = Some(seen);
        }
    }

    /// Add `other`'s counts to `tally`.
    fn merge_tally<'q>(&self, tally: &mut Tally<'q>, other: Tally<'q>) {
        tally.ahead += other.ahead;
        tally.in_partition += other.in_partition;
        for (account, count) in other.by_account.into_iter().enumerate() {
            if count > 0 {
                *grow(&mut tally.by_account, account) += count;
            }
        }
        if let Some(seen) = other.last {
            self.keep_later(&mut tally.last, seen);
        }
    }

    /// The counts as the shard reports them, the job just ahead evaluated
    /// whole.
    fn finish(&self, tally: Tally<'_>, now: Time) -> AheadCounts {
        let by_account = tally
            .by_account
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(account, count)| (account as AccountId, *count))
            .collect();
        let just_ahead = tally
            .last
            .and_then(|seen| self.evaluate_with(seen.record, seen.fairshare, now));
        AheadCounts {
            ahead: tally.ahead,
            by_account,
            in_partition: tally.in_partition,
            just_ahead,
        }
    }
}
