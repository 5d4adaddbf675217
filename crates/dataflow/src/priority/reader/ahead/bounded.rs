//! The counted place from bounds (`Queue::count_clearing`): under Slurm's
//! model, for a target above the floor and below the cap, the jobs surely
//! above its priority are counted per (user, account, partition) vector
//! without being evaluated; only the band (jobs whose priority may equal
//! the target's) is evaluated and ordered exactly (submit time, then id),
//! and the job just ahead is found among the band's jobs ahead and the
//! lowest of the counted prefixes: a prefix is read from its end, job by
//! job, only while its lower bound could place one of its jobs after the
//! latest job ahead found so far.

use fairflow_model::priority_formula::PRIORITY_MAX_U32;
use fairflow_model::{PriorityModel, Time};

use super::{AheadCounts, Tally, Target};
use crate::priority::queue::{CountBounds, SurePrefix};
use crate::priority::reader::{queue_floor, PriorityReader};
use crate::types::grow;

impl PriorityReader {
    /// The counts of the jobs ahead of `target` at `now` from bounds;
    /// `None` where they are not counted this way (another model, a target
    /// at the floor or the cap, bounds that do not hold at `now`).
    pub(super) fn count_ahead_bounded(
        &self,
        target: &Target<'_>,
        now: Time,
    ) -> Option<AheadCounts> {
        let model = self.queue.any_record()?.model();
        if model != PriorityModel::Slurm
            || target.priority <= queue_floor(model)
            || target.priority >= PRIORITY_MAX_U32
        {
            return None;
        }
        let counted = self.queue.count_clearing(now, target.priority)?;
        let mut tally = Tally::default();
        for prefix in &counted.sure {
            let jobs = prefix.jobs.len() as u64;
            tally.ahead += jobs;
            *grow(&mut tally.by_account, prefix.account as usize) += jobs;
            if prefix.partition == target.partition {
                tally.in_partition += jobs;
            }
        }
        for &(record, fairshare) in &counted.band {
            if let Some(seen) = self.seen_ahead(record, fairshare, now, target) {
                self.add(&mut tally, seen, target);
            }
        }
        self.find_just_ahead(&mut tally, &counted.bounds, counted.sure, now, target);
        Some(self.finish(tally, now))
    }

    /// Complete `tally.last` (the latest job ahead in queue order) with the
    /// counted prefixes: a prefix whose lowest bound is at least one above
    /// the latest found holds none later, and within a prefix read from its
    /// end the same bound stops the read. The order in which prefixes are
    /// read changes only how many are pruned, not the job found: when no
    /// job of the band is ahead, the prefix of lowest bound is read first;
    /// then only the prefixes that bound does not prune are read, lowest
    /// first (a linear filter, not a sort of every prefix: at the middle of
    /// a million jobs there are about a hundred thousand, and none or a
    /// handful survive).
    fn find_just_ahead<'q>(
        &'q self,
        tally: &mut Tally<'q>,
        bounds: &CountBounds,
        sure: Vec<SurePrefix<'q>>,
        now: Time,
        target: &Target<'_>,
    ) {
        let lowest = |prefix: &SurePrefix<'_>| {
            let (std::cmp::Reverse(key), _) = prefix.jobs[prefix.jobs.len() - 1];
            bounds.lo(key, prefix.factor, prefix.class)
        };
        let mut by_lowest: Vec<(f64, usize)> = (sure.iter().map(lowest))
            .enumerate()
            .map(|(index, lo)| (lo, index))
            .collect();
        if tally.last.is_none() {
            let first = (by_lowest.iter())
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|&(_, index)| index);
            if let Some(index) = first {
                self.read_prefix_back(tally, bounds, &sure[index], now, target);
            }
        }
        if let Some(last) = tally.last {
            let cut = last.priority as f64 + 1.0;
            by_lowest.retain(|&(lo, _)| lo < cut);
        }
        by_lowest.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (lo, index) in by_lowest {
            if beyond(tally, lo) {
                return;
            }
            self.read_prefix_back(tally, bounds, &sure[index], now, target);
        }
    }

    /// Read `prefix` from its end into `tally.last` while its jobs' lower
    /// bounds could place one after the latest job ahead found so far.
    fn read_prefix_back<'q>(
        &'q self,
        tally: &mut Tally<'q>,
        bounds: &CountBounds,
        prefix: &SurePrefix<'q>,
        now: Time,
        target: &Target<'_>,
    ) {
        for &(std::cmp::Reverse(key), job) in prefix.jobs.iter().rev() {
            if beyond(tally, bounds.lo(key, prefix.factor, prefix.class)) {
                break;
            }
            let Some(record) = self.queue.record(job) else {
                continue;
            };
            let factor = if prefix.own_factor {
                prefix.factor
            } else {
                self.queue.fairshare_of(record.row.assoc)
            };
            if let Some(seen) = self.seen_ahead(record, factor, now, target) {
                self.keep_later(&mut tally.last, seen);
            }
        }
    }
}

/// Can no job whose lower bound is `lo` come after `tally`'s latest job
/// ahead (its integer priority would be above that job's)?
fn beyond(tally: &Tally<'_>, lo: f64) -> bool {
    tally
        .last
        .is_some_and(|last| lo >= last.priority as f64 + 1.0)
}
