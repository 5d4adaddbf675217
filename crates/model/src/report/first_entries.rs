//! The first `k` entries of Slurm's scheduler queue from listed jobs' rows
//! taken one at a time: exactly the first `k` of
//! [`super::entries::entry_queue`] over the same rows in the same order,
//! without holding every row or sorting every entry. A one-off `top` of a
//! million jobs keeps `k` rows instead of a million (and their copies as
//! entries), and pays one comparison of integers for most rows.
//!
//! The order is [`EntryKey`]'s (the one rule, in `entries`); entries that tie
//! on it (one job's entries) keep the order they came in, as the stable
//! sort of `entry_queue` keeps it.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::entries::EntryKey;
use super::{JobPriority, JobState};
use crate::config::PriorityModel;
use crate::Time;

/// [`EntryKey`]'s fields before the job id: comparing them needs no
/// allocation, and decides against most entries.
type KeyPrefix = (Reverse<bool>, Reverse<u16>, Reverse<u64>, Time);

fn prefix_of(entry: &JobPriority) -> KeyPrefix {
    (
        Reverse(entry.expedited),
        Reverse(entry.priority_tier),
        Reverse(entry.priority),
        entry.submit_at,
    )
}

fn prefix_of_key(key: &EntryKey) -> KeyPrefix {
    (
        key.expedited,
        key.priority_tier,
        key.queue.priority,
        key.queue.submit_at,
    )
}

/// An entry kept, ordered by its key, then by arrival.
struct Kept {
    key: EntryKey,
    arrival: u64,
    entry: JobPriority,
}

impl Kept {
    fn rank(&self) -> (&EntryKey, u64) {
        (&self.key, self.arrival)
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.rank() == other.rank()
    }
}

impl Eq for Kept {}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank().cmp(&other.rank())
    }
}

/// The best `k` entries seen, the worst of them on top.
struct Selection {
    k: usize,
    kept: BinaryHeap<Kept>,
    arrivals: u64,
}

impl Selection {
    fn offer(&mut self, entry: JobPriority) {
        self.arrivals += 1;
        if self.kept.len() == self.k {
            let Some(worst) = self.kept.peek() else {
                return; // k is 0: nothing is kept.
            };
            // A later arrival with the worst's key ranks after it: only a
            // smaller key can enter.
            if prefix_of(&entry) > prefix_of_key(&worst.key) {
                return;
            }
            let key = entry.entry_key();
            if key >= worst.key {
                return;
            }
            self.kept.pop();
            self.push(key, entry);
        } else {
            self.push(entry.entry_key(), entry);
        }
    }

    fn push(&mut self, key: EntryKey, entry: JobPriority) {
        self.kept.push(Kept {
            key,
            arrival: self.arrivals,
            entry,
        });
    }
}

/// The first `k` entries, in queue order, of the scheduler's queue of
/// `listed` (every listed job's row, in the order
/// [`super::entries::entry_queue`] would be given them): that queue's
/// first `k`, each entry as it makes them ([`JobPriority::queue_entries`]).
pub fn first_entries(listed: impl IntoIterator<Item = JobPriority>, k: usize) -> Vec<JobPriority> {
    if k == 0 {
        return Vec::new();
    }
    let mut selection = Selection {
        k,
        kept: BinaryHeap::with_capacity(k.min(1 << 16)),
        arrivals: 0,
    };
    for row in listed {
        if row.state != JobState::Pending {
            continue;
        }
        if row.model != PriorityModel::Slurm || row.pairs.is_empty() {
            // Its own one entry (`queue_entries`), without a copy.
            selection.offer(row);
        } else {
            row.queue_entries()
                .into_iter()
                .for_each(|entry| selection.offer(entry));
        }
    }
    (selection.kept.into_sorted_vec().into_iter())
        .map(|kept| kept.entry)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::entries::entry_queue;
    use crate::report::tests::job;

    /// A pending Slurm row in partition `p1` (no QOS) submitted at `submit_at`.
    fn row(id: &str, priority: u64, submit_at: Time) -> JobPriority {
        JobPriority {
            submit_at,
            ..job(id, priority, &[])
        }
    }

    /// Rows whose queue order is known by hand: job ids that compare as
    /// numbers ("9" before "10"), ties on priority and submit time, an
    /// expedited job, a higher tier, a held job, and jobs with several
    /// entries (a partition list, and one partition with two QOS, whose
    /// entries tie on the whole key).
    fn rows() -> Vec<JobPriority> {
        let mut held = row("1", 900, 1);
        held.state = JobState::Held;
        let mut expedited = row("7", 1, 50);
        expedited.expedited = true;
        let mut high_tier = row("8", 2, 40);
        high_tier.priority_tier = 3;
        let listed = JobPriority {
            submit_at: 5,
            ..job("11", 500, &[("p1", "", 100), ("q", "", 700)])
        };
        let two_qos = JobPriority {
            submit_at: 5,
            ..job("12", 300, &[("p1", "high", 300), ("p1", "low", 300)])
        };
        vec![
            held,
            row("10", 600, 5),
            listed,
            two_qos,
            row("9", 600, 5),
            row("5", 600, 4),
            expedited,
            high_tier,
            row("13", 100, 1),
        ]
    }

    #[test]
    fn the_first_entries_are_the_queues_first_in_its_order() {
        // By hand: expedited 7; tier 3's 8; then by priority: 11 at its
        // pair q (700); 5, 9, 10 at 600 (5 submitted earlier; 9 before 10
        // as numbers); 12's two entries at its own 300 in pair order (high,
        // low); at 100, 13 (submitted at 1) before 11 at its pair p1
        // (submitted at 5). Held 1 has no entry.
        let want = [
            ("7", "p1", ""),
            ("8", "p1", ""),
            ("11", "q", ""),
            ("5", "p1", ""),
            ("9", "p1", ""),
            ("10", "p1", ""),
            ("12", "p1", "high"),
            ("12", "p1", "low"),
            ("13", "p1", ""),
            ("11", "p1", ""),
        ];
        let whole = first_entries(rows(), usize::MAX);
        let named: Vec<(&str, &str, &str)> = whole
            .iter()
            .map(|e| (e.job.as_str(), e.partition.as_str(), e.qos.as_str()))
            .collect();
        assert_eq!(named, want);
        assert_eq!(whole, entry_queue(&rows()));
        for k in 0..=want.len() + 1 {
            let first = first_entries(rows(), k);
            assert_eq!(first, whole[..k.min(whole.len())], "k = {k}");
        }
    }
}
