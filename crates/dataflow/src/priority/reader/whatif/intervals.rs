//! Which interval of a what-if's probes a job falls in (how many probes
//! are ahead of it in queue order): [`interval_of`], a binary search over
//! the probes, and [`ProbeIndex`], the same answer from a table by integer
//! priority for a tally that places every job of a window (one lookup, and
//! a search only among the probes of the job's own priority).

use std::cell::LazyCell;
use std::cmp::Ordering;

use fairflow_model::report::JobIdOrder;
use fairflow_model::Time;

use super::ProbeKey;
use crate::names::JobNames;

/// The interval of a job of key (`priority`, `submit_at`, its id's order,
/// asked only on a tie of both) among `probes` (in queue order; a probe's
/// order read from `names` on such a tie): how many probes are ahead of it.
pub(super) fn interval_of(
    probes: &[ProbeKey],
    names: &JobNames,
    priority: u64,
    submit_at: Time,
    order: impl FnOnce() -> JobIdOrder,
) -> usize {
    let own = LazyCell::new(order);
    probes.partition_point(|probe| {
        let first = by_key(probe, priority, submit_at);
        if first != Ordering::Equal {
            return first.is_lt();
        }
        probe.order(names).compare(&own).is_lt()
    })
}

/// A probe against a job of key (`priority`, `submit_at`) in queue order by
/// those two alone: `Less` when the probe is ahead (a higher priority, or
/// the same and submitted earlier), `Equal` when only the names can tell.
pub(super) fn by_key(probe: &ProbeKey, priority: u64, submit_at: Time) -> Ordering {
    (priority.cmp(&probe.priority)).then(probe.submit_at.cmp(&submit_at))
}

/// The largest window of priorities (`high − low + 1`) a [`ProbeIndex`]
/// tabulates (4 MiB of `u32`); a wider one is searched.
const MOST_TABULATED: u64 = 1 << 20;

/// The probes of a window `[low, high]` of integer priorities, with, per
/// priority of the window, how many probes have a higher one.
pub(super) struct ProbeIndex<'p> {
    probes: &'p [ProbeKey],
    names: &'p JobNames,
    low: u64,
    high: u64,
    /// `higher[p − low]`: the probes of priority above `p` (empty when the
    /// window is too wide to tabulate).
    higher: Vec<u32>,
}

impl<'p> ProbeIndex<'p> {
    /// The index of `probes` (in queue order, so by priority descending),
    /// named from `names` where a tie asks.
    pub(super) fn new(probes: &'p [ProbeKey], names: &'p JobNames) -> Self {
        let low = probes.last().map_or(0, |p| p.priority);
        let high = probes.first().map_or(0, |p| p.priority);
        let span = (high - low).saturating_add(1);
        let mut higher = Vec::new();
        if !probes.is_empty() && span <= MOST_TABULATED && probes.len() < u32::MAX as usize {
            higher.reserve(span as usize);
            let mut ahead = 0usize;
            for priority in (low..=high).rev() {
                while probes.get(ahead).is_some_and(|p| p.priority > priority) {
                    ahead += 1;
                }
                higher.push(ahead as u32);
            }
            higher.reverse();
        }
        ProbeIndex {
            probes,
            names,
            low,
            high,
            higher,
        }
    }

    /// [`interval_of`] the probes.
    pub(super) fn interval(
        &self,
        priority: u64,
        submit_at: Time,
        order: impl FnOnce() -> JobIdOrder,
    ) -> usize {
        if self.higher.is_empty() {
            return interval_of(self.probes, self.names, priority, submit_at, order);
        }
        if priority > self.high {
            return 0;
        }
        if priority < self.low {
            return self.probes.len();
        }
        let at = (priority - self.low) as usize;
        let from = self.higher[at] as usize;
        // The probes of this very priority: those above `priority − 1`.
        let to = match at.checked_sub(1) {
            Some(below) => self.higher[below] as usize,
            None => self.probes.len(),
        };
        from + interval_of(
            &self.probes[from..to],
            self.names,
            priority,
            submit_at,
            order,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::reader::whatif::ProbeJob;
    use std::sync::Arc;

    fn id(job: &str) -> JobIdOrder {
        JobIdOrder::of(&Arc::from(job))
    }

    fn probe(priority: u64, submit_at: Time, job: &str) -> ProbeKey {
        ProbeKey {
            priority,
            submit_at,
            job: ProbeJob::Name(Arc::from(job)),
        }
    }

    #[test]
    fn the_table_places_every_key_as_the_search_does() {
        // In queue order: priority descending, then submit time, then id
        // ("9" before "10": ids order as numbers).
        let probes = [
            probe(50, 0, "1"),
            probe(40, 5, "9"),
            probe(40, 5, "10"),
            probe(40, 7, "2"),
            probe(38, 1, "3"),
            probe(30, 0, "4"),
        ];
        let names = JobNames::default();
        let index = ProbeIndex::new(&probes, &names);
        assert!(!index.higher.is_empty());
        for priority in 25..=55 {
            for submit_at in [0, 5, 6, 7, 9] {
                for job in ["1", "8", "9", "10", "11", "2"] {
                    let order = || id(job);
                    assert_eq!(
                        index.interval(priority, submit_at, order),
                        interval_of(&probes, &names, priority, submit_at, order),
                        "{priority} {submit_at} {job}"
                    );
                }
            }
        }
        // By hand: a job at 40, submitted at 5, id "9" has the probe at 50
        // ahead, then itself ties "9" (not ahead): 1; id "10" also has "9"
        // ahead: 2; at 39 every probe down to (40, 7, "2"): 4.
        assert_eq!(index.interval(40, 5, || id("9")), 1);
        assert_eq!(index.interval(40, 5, || id("10")), 2);
        assert_eq!(index.interval(39, 0, || id("1")), 4);
        assert_eq!(index.interval(51, 0, || id("1")), 0);
        assert_eq!(index.interval(29, 0, || id("1")), 6);
    }

    #[test]
    fn a_window_too_wide_is_searched() {
        let probes = [probe(u64::MAX - 1, 0, "1"), probe(3, 0, "2")];
        let names = JobNames::default();
        let index = ProbeIndex::new(&probes, &names);
        assert!(index.higher.is_empty());
        assert_eq!(index.interval(1_000, 0, || id("3")), 1);
        let none = ProbeIndex::new(&[], &names);
        assert_eq!(none.interval(7, 0, || id("3")), 0);
    }
}
