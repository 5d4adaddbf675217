//! Per Fair Tree group, the ranked jobs of its user members in one set of
//! sorted vectors (per rank class, account and partition, highest `key_hi`
//! first), so that `Queue::count_clearing` counts a group's users whole,
//! with one binary search per vector, where the group's range of factors
//! leaves none of their jobs in the band (see `count`'s module
//! documentation), instead of opening each user.
//!
//! A user association's jobs are entered in the group its tree slot names
//! (`UserJobs::counted_in`, kept by `Queue::refresh_user_entries` as users
//! are placed and unplaced); a group of more than
//! [`GROUP_COUNTED_MAX_JOBS`] ranked jobs drops its vectors (an insertion
//! shifts at most that many entries) and is counted user by user until it
//! holds none again.

use super::{enter, leave, Cell, CountedJobs};
use crate::priority::queue::Ranked;
use crate::types::{grow, NodeId};

/// The ranked jobs of a group's users above which the group keeps no
/// vectors of its own (512 KiB of entries shifted at most per insertion).
pub(in crate::priority::queue) const GROUP_COUNTED_MAX_JOBS: u64 = 32_768;

/// One group's vectors (see the module documentation).
#[derive(Debug, Default)]
struct GroupJobs {
    /// Its users' ranked jobs, counted even while `dropped`.
    jobs: u64,
    /// More than [`GROUP_COUNTED_MAX_JOBS`] were entered since it last held
    /// none: no vectors kept.
    dropped: bool,
    counted: [Vec<CountedJobs>; 2],
}

/// Every group's vectors, by group node.
#[derive(Debug, Default)]
pub(in crate::priority::queue) struct GroupCounts {
    groups: Vec<GroupJobs>,
}

impl GroupCounts {
    /// Enter a ranked job of a user of `group`.
    pub(in crate::priority::queue) fn insert(
        &mut self,
        group: NodeId,
        class: usize,
        cell: Cell,
        entry: Ranked,
    ) {
        let kept = grow(&mut self.groups, group as usize);
        kept.jobs += 1;
        if kept.dropped {
            return;
        }
        if kept.jobs > GROUP_COUNTED_MAX_JOBS {
            kept.dropped = true;
            kept.counted = Default::default();
            return;
        }
        enter(&mut kept.counted[class], cell, entry);
    }

    /// Take a ranked job of a user of `group` out.
    pub(in crate::priority::queue) fn remove(
        &mut self,
        group: NodeId,
        class: usize,
        cell: Cell,
        entry: Ranked,
    ) {
        let Some(kept) = self.groups.get_mut(group as usize) else {
            return;
        };
        kept.jobs = kept.jobs.saturating_sub(1);
        if kept.dropped {
            kept.dropped = kept.jobs > 0;
            return;
        }
        leave(&mut kept.counted[class], cell, entry);
    }

    /// A group's vectors of `class` (`None`: dropped, too many jobs).
    pub(in crate::priority::queue) fn vectors(
        &self,
        group: NodeId,
        class: usize,
    ) -> Option<&[CountedJobs]> {
        match self.groups.get(group as usize) {
            Some(kept) if kept.dropped => None,
            Some(kept) => Some(&kept.counted[class]),
            None => Some(&[]),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use super::*;

    /// Entries of one group, one account and partition, keyed by job.
    fn entry(job: u32) -> Ranked {
        (Reverse(u64::from(job)), job)
    }

    #[test]
    fn a_group_past_its_cap_keeps_no_vectors_until_it_holds_none() {
        let mut counts = GroupCounts::default();
        let cell = (3, 1);
        let cap = GROUP_COUNTED_MAX_JOBS as u32;
        for job in 0..cap {
            counts.insert(7, 0, cell, entry(job));
        }
        let kept = counts.vectors(7, 0).expect("at the cap: kept");
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].jobs.len(), cap as usize);
        assert_eq!(
            kept[0].jobs.first(),
            Some(&entry(cap - 1)),
            "highest key first"
        );
        // One more: dropped; every removal but the last leaves it dropped.
        counts.insert(7, 1, cell, entry(cap));
        assert!(counts.vectors(7, 0).is_none() && counts.vectors(7, 1).is_none());
        for job in 0..cap {
            counts.remove(7, 0, cell, entry(job));
            assert!(counts.vectors(7, 0).is_none(), "{job} removed");
        }
        counts.remove(7, 1, cell, entry(cap));
        assert_eq!(counts.vectors(7, 0).map(<[_]>::len), Some(0));
        // Kept again from empty; another group was never touched.
        counts.insert(7, 0, cell, entry(5));
        assert_eq!(
            counts.vectors(7, 0).map(|v| v[0].jobs.clone()),
            Some(vec![entry(5)])
        );
        assert_eq!(counts.vectors(2, 0).map(<[_]>::len), Some(0));
    }
}
