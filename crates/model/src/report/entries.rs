//! Slurm's scheduler queue as its entries: `build_job_queue`
//! (`src/slurmctld/job_scheduler.c`) appends one entry per (partition, QOS)
//! pair of each pending job, and `sort_job_queue2` orders them. This module
//! owns the one rule both engines rank entries by ([`EntryKey`]), a job's
//! entries ([`JobPriority::queue_entries`]), and a job's place among them
//! ([`position_in`]).
//!
//! # What of `sort_job_queue2` fairflow models (Slurm 22.05 to 26.x)
//! 1. A job marked for expedited requeue (`JOB_EXPEDITING`, 25.11) before
//!    one that is not.
//! 2. Preemption (`preempt_g_job_preempt_check`) and reservations
//!    (`resv_id`, magnetic ones) come next in Slurm; fairflow has neither
//!    (no nodes, no reservations), so they never decide.
//! 3. The entry's partition `PriorityTier`, highest first. Heterogeneous
//!    jobs (`bf_hetjob_prio`) are not modelled: fairflow has none.
//! 4. The priority, highest first: the pair's `priority_array` entry when
//!    the job has a partition list (`part_ptr_list`), else the job's own
//!    priority (a job in one partition with several QOS has all its
//!    entries at its own priority).
//! 5. The submit time, earliest first; 6. the job id ([`super::JobIdKey`]).
//!    Slurm's last ties (array task id, reservation start time,
//!    `use_prefer`) concern what fairflow has none of.
//!
//! Entries of one job that tie on all of these (Slurm leaves their order to
//! `qsort`) keep the job's pair order (`priority_array` order): the sorts
//! here are stable and a job's entries are made in that order.
//!
//! The Flux and Moab models rank each job once (tier 0, never expedited).

use std::cmp::Reverse;

use super::position::{
    partition_places_single, partitions_of, EntryPlace, PartitionPlace, Position,
};
use super::{JobPriority, JobState, QueueKey};
use crate::config::PriorityModel;

/// The order of the scheduler's queue: ascending key order is the order
/// Slurm's scheduler visits entries (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryKey {
    /// Expedited first.
    pub expedited: Reverse<bool>,
    /// The entry's partition `PriorityTier`, highest first.
    pub priority_tier: Reverse<u16>,
    /// Then priority, submit time, job id.
    pub queue: QueueKey,
}

impl JobPriority {
    /// This row's key in the scheduler's queue (a row of
    /// [`JobPriority::queue_entries`]).
    pub fn entry_key(&self) -> EntryKey {
        EntryKey {
            expedited: Reverse(self.expedited),
            priority_tier: Reverse(self.priority_tier),
            queue: self.queue_key(),
        }
    }

    /// The job's entries in the scheduler's queue, in its pair order: one
    /// per (partition, QOS) pair under Slurm, each naming its pair
    /// (`partition`, `qos`, `priority_tier`); a job with a partition list
    /// has each pair's priority and factors, a job in one partition with
    /// several QOS its own priority and factors in every entry. Every entry
    /// keeps the job's `pairs`. A job with one pair, and every job under
    /// Flux and Moab, is its own one entry.
    pub fn queue_entries(&self) -> Vec<JobPriority> {
        if self.model != PriorityModel::Slurm || self.pairs.is_empty() {
            return vec![self.clone()];
        }
        let partition_list = self
            .pairs
            .windows(2)
            .any(|two| two[0].partition != two[1].partition);
        self.pairs
            .iter()
            .map(|pair| {
                let mut entry = JobPriority {
                    partition: pair.partition.clone(),
                    qos: pair.qos.clone(),
                    priority_tier: pair.priority_tier,
                    ..self.clone()
                };
                if partition_list {
                    entry.priority = pair.priority;
                    entry.factors.clone_from(&pair.factors);
                }
                entry
            })
            .collect()
    }
}

/// The scheduler's queue from listed jobs' priorities: every entry of every
/// pending job, in [`EntryKey`] order.
pub fn entry_queue<'a>(listed: impl IntoIterator<Item = &'a JobPriority>) -> Vec<JobPriority> {
    let mut queue: Vec<JobPriority> = listed
        .into_iter()
        .filter(|p| p.state == JobState::Pending)
        .flat_map(JobPriority::queue_entries)
        .collect();
    queue.sort_by_cached_key(JobPriority::entry_key);
    queue
}

/// Are the scheduler's entries of these jobs the jobs themselves, in
/// [`QueueKey`] order? True when no job has several entries, none is
/// expedited and all have one tier: then the queue of jobs by their own
/// priority is the scheduler's queue.
pub fn entries_are_jobs<'a>(jobs: impl IntoIterator<Item = &'a JobPriority>) -> bool {
    let mut tier = None;
    jobs.into_iter().all(|job| {
        let single = job.model != PriorityModel::Slurm || job.pairs.is_empty();
        let same_tier = *tier.get_or_insert(job.priority_tier) == job.priority_tier;
        single && !job.expedited && same_tier
    })
}

/// The place of job `id` in `queue` (the scheduler's queue, in order, or
/// a prefix of it holding every entry of the job): its first entry's rank,
/// its rank in each of its partitions (among the entries there), and its
/// other entries. `None` when the job has no entry.
pub fn position_in(queue: &[JobPriority], id: &str) -> Option<Position> {
    let first = queue.iter().position(|entry| entry.job == id)?;
    let job = &queue[first];
    let partitions = partitions_of(job)
        .into_iter()
        .filter_map(|partition| {
            let mut rank = 0;
            for entry in queue {
                if entry.partition != partition {
                    continue;
                }
                rank += 1;
                if entry.job == id {
                    return Some(PartitionPlace {
                        partition,
                        rank,
                        priority: entry.priority,
                    });
                }
            }
            None
        })
        .collect();
    let entries = queue
        .iter()
        .enumerate()
        .skip(first + 1)
        .filter(|(_, entry)| entry.job == id)
        .map(|(index, entry)| EntryPlace {
            partition: entry.partition.clone(),
            qos: entry.qos.clone(),
            rank: index as u64 + 1,
            priority: entry.priority,
        })
        .collect();
    let mut place = Position::from_queue(queue[..=first].to_vec(), partitions)?;
    place.entries = entries;
    Some(place)
}

/// The place of the last entry of `through` (the scheduler's queue cut
/// after the first entry of a job with one entry): its partition's rank is
/// counted in `through`, as the entries of a partition keep the queue's
/// order. A job with several entries needs [`position_in`] on the queue.
pub fn position_single(through: Vec<JobPriority>) -> Option<Position> {
    let partitions = partition_places_single(&through);
    Position::from_queue(through, partitions)
}

#[cfg(test)]
mod tests {
    use super::{entry_queue, position_in};
    use crate::config::PriorityModel;
    use crate::report::{JobPriority, JobState, PairPriority};

    /// A pending Slurm job with its own priority, tier and pairs
    /// `(partition, qos, priority, tier)`.
    fn job(
        id: &str,
        submit_at: i64,
        own: (u64, u16),
        pairs: &[(&str, &str, u64, u16)],
    ) -> JobPriority {
        JobPriority {
            job: id.to_string(),
            user: "u".into(),
            account: "a".into(),
            partition: pairs.first().map_or("low", |p| p.0).to_string(),
            qos: pairs.first().map_or("", |p| p.1).to_string(),
            submit_at,
            priority: own.0,
            state: JobState::Pending,
            model: PriorityModel::Slurm,
            factors: Vec::new(),
            pairs: pairs
                .iter()
                .map(|&(partition, qos, priority, priority_tier)| PairPriority {
                    partition: partition.into(),
                    qos: qos.into(),
                    priority,
                    factors: Vec::new(),
                    priority_tier,
                })
                .collect(),
            priority_tier: own.1,
            expedited: false,
        }
    }

    fn order(queue: &[JobPriority]) -> Vec<(&str, &str, u64)> {
        queue
            .iter()
            .map(|e| (e.job.as_str(), e.partition.as_str(), e.priority))
            .collect()
    }

    #[test]
    fn the_tier_comes_before_the_priority_and_expedited_before_both() {
        // sort_job_queue2 by hand: partition `high` has PriorityTier 2,
        // `low` 1. X (low, 5000); Y in high (1000) and low (3000); Z (high,
        // 1500); W (low, 10) marked expedited; V (low, 3000) submitted at
        // the same time as Y and with a larger id. Expedited W first; then
        // tier 2: Z 1500, Y 1000 (Y's lower priority is ahead of X's 5000
        // for its tier); then tier 1: X 5000, Y 3000 and V 3000 tied on
        // priority and submit time, Y's id first.
        let x = job("10", 100, (5000, 1), &[]);
        let y = job(
            "11",
            100,
            (1000, 2),
            &[("high", "", 1000, 2), ("low", "", 3000, 1)],
        );
        let mut z = job("12", 100, (1500, 2), &[]);
        z.partition = "high".into();
        let mut w = job("13", 100, (10, 1), &[]);
        w.expedited = true;
        let v = job("14", 100, (3000, 1), &[]);
        let queue = entry_queue(&[x, y, z, w, v]);
        assert_eq!(
            order(&queue),
            vec![
                ("13", "low", 10),
                ("12", "high", 1500),
                ("11", "high", 1000),
                ("10", "low", 5000),
                ("11", "low", 3000),
                ("14", "low", 3000),
            ]
        );
        // Y's place: its first entry is 3rd (2nd of high's, after Z), its
        // entry in `low` 5th (3rd of low's, after W and X).
        let place = position_in(&queue, "11").expect("queued");
        assert_eq!(place.rank, 3);
        assert_eq!(place.job.partition, "high");
        assert_eq!(place.entries.len(), 1);
        assert_eq!(
            (place.entries[0].rank, place.entries[0].priority),
            (5, 3000)
        );
        let ranks: Vec<(&str, u64)> = place
            .partitions
            .iter()
            .map(|p| (p.partition.as_str(), p.rank))
            .collect();
        assert_eq!(ranks, vec![("high", 2), ("low", 3)]);
    }

    #[test]
    fn held_jobs_have_no_entry_and_flux_jobs_one() {
        let mut held = job("1", 100, (0, 0), &[("p", "", 0, 0), ("q", "", 0, 0)]);
        held.state = JobState::Held;
        let mut flux = job("2", 100, (7, 0), &[("p", "", 7, 0), ("q", "", 9, 0)]);
        flux.model = PriorityModel::Flux;
        let queue = entry_queue(&[held, flux]);
        assert_eq!(order(&queue), vec![("2", "p", 7)]);
    }
}
