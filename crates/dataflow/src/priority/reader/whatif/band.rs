//! A what-if tally's band placed by sorting, not by searching
//! ([`sorted_keys`], [`place_sorted`]): the jobs a window count could not
//! count whole are evaluated on every core, the changed ones left out (a
//! bit set of their ids, `JobIdSet`, not a search per job), sorted in queue order by
//! priority and submit time, and walked beside the probes (themselves in
//! queue order) in one merge. Only a job whose priority and submit time
//! equal some probe's compares job ids (`JobIdOrder`: numbers where the
//! ids are plain), among those probes alone.
//!
//! Cost: one evaluation per band job (halved on two cores), a sort of the
//! band's keys, and a merge that reads the keys alone (each carries its
//! job's id: no record is read again but a kept job's); no lookup per job
//! in a table of every priority of the window or among the probes.

use std::cmp::{Ordering, Reverse};

use fairflow_model::report::{JobIdOrder, JobState};
use fairflow_model::Time;
use rayon::prelude::*;

use super::intervals::{by_key, interval_of};
use super::ProbeKey;
use crate::names::JobNames;
use crate::priority::record::PriorityRecord;
use crate::types::{JobId, JobIdSet};

/// Band jobs evaluated per task of the pool.
const CHUNK: usize = 4096;

/// A band job ranked at the tally's time, with its key.
#[derive(Clone, Copy)]
pub(super) struct BandKey<'q> {
    pub(super) priority: u64,
    pub(super) submit_at: Time,
    /// Its job's id, read with its key: the merge that enters every band
    /// job reads no record (a cache miss each) but a kept one's.
    pub(super) job: JobId,
    pub(super) record: &'q PriorityRecord,
    pub(super) fairshare: f64,
}

/// The jobs of `band` not in `excluded` that are pending at `now` with a
/// priority of at least `low`, in queue order of priority and submit time
/// (equal ones in any order).
pub(super) fn sorted_keys<'q>(
    band: &[(&'q PriorityRecord, f64)],
    excluded: &JobIdSet,
    low: u64,
    now: Time,
) -> Vec<BandKey<'q>> {
    let mut keys: Vec<BandKey<'q>> = band
        .par_chunks(CHUNK)
        .flat_map_iter(|chunk| {
            chunk.iter().filter_map(|&(record, fairshare)| {
                let job = record.job();
                if excluded.contains(job) {
                    return None;
                }
                let (JobState::Pending, priority) = record.priority_at(fairshare, now, None)?
                else {
                    return None;
                };
                (priority >= low).then_some(BandKey {
                    priority,
                    submit_at: record.row.submit_at,
                    job,
                    record,
                    fairshare,
                })
            })
        })
        .collect();
    keys.par_sort_unstable_by_key(|key| (Reverse(key.priority), key.submit_at));
    keys
}

/// The queue-order key of a band job: its priority and submit time.
pub(super) trait Keyed {
    fn key(&self) -> (u64, Time);
}

impl Keyed for BandKey<'_> {
    fn key(&self) -> (u64, Time) {
        (self.priority, self.submit_at)
    }
}

/// Call `each` with every key of `keys` (sorted by [`sorted_keys`]) and its
/// interval among `probes` (in queue order: how many are ahead of it; a
/// probe's id order read from `names` on a tie); a key's own id order
/// (`order`) is asked only on a tie of priority and submit time with a
/// probe.
pub(super) fn place_sorted<K: Keyed>(
    (probes, names): (&[ProbeKey], &JobNames),
    keys: &[K],
    order: impl Fn(&K) -> JobIdOrder,
    mut each: impl FnMut(&K, usize),
) {
    // Probes ahead of the current run by priority and submit time alone.
    let mut ahead = 0usize;
    for run in keys.chunk_by(|a, b| a.key() == b.key()) {
        let (priority, submit_at) = run[0].key();
        let by_probe = |probe: &ProbeKey| by_key(probe, priority, submit_at);
        while probes
            .get(ahead)
            .is_some_and(|p| by_probe(p) == Ordering::Less)
        {
            ahead += 1;
        }
        let tied = probes[ahead..]
            .iter()
            .take_while(|p| by_probe(p) == Ordering::Equal)
            .count();
        for key in run {
            if tied == 0 {
                each(key, ahead);
                continue;
            }
            let tied_probes = &probes[ahead..ahead + tied];
            let within = interval_of(tied_probes, names, priority, submit_at, || order(key));
            each(key, ahead + within);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::reader::whatif::ProbeJob;
    use crate::tests::random_tree::xorshift;
    use std::sync::Arc;

    impl Keyed for (u64, Time, String) {
        fn key(&self) -> (u64, Time) {
            (self.0, self.1)
        }
    }

    /// Ids plain, with a leading zero, or text: they order by number, by
    /// text, and plain numbers before any text.
    const IDS: [&str; 9] = ["1", "2", "9", "10", "07", "7", "j3", "j10", "11"];

    /// On random probes and keys with many ties (few priorities, submit
    /// times and ids), every key's interval is the one a binary search of
    /// the probes gives (`interval_of`), and a key's id order is asked only
    /// on a tie of priority and submit time with some probe.
    #[test]
    fn the_merge_places_every_key_as_the_search_does() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| xorshift(&mut seed, n);
        let mut ties = 0;
        let names = JobNames::default();
        let order_of = |id: &str| JobIdOrder::of(&Arc::from(id));
        for _round in 0..200 {
            let mut probes: Vec<ProbeKey> = (0..next(12))
                .map(|_| ProbeKey {
                    priority: 10 + next(6),
                    submit_at: next(3) as Time,
                    job: ProbeJob::Name(Arc::from(IDS[next(IDS.len() as u64) as usize])),
                })
                .collect();
            probes.sort_by(|a, b| {
                (b.priority.cmp(&a.priority))
                    .then(a.submit_at.cmp(&b.submit_at))
                    .then_with(|| {
                        let name = |p: &ProbeKey| match &p.job {
                            ProbeJob::Name(name) => name.clone(),
                            ProbeJob::Id(_) | ProbeJob::Number(_) => Arc::from(""),
                        };
                        fairflow_model::report::JobIdKey::compare(&name(a), &name(b))
                    })
            });
            let mut keys: Vec<(u64, Time, String)> = (0..next(20))
                .map(|_| {
                    let id = IDS[next(IDS.len() as u64) as usize].to_string();
                    (9 + next(8), next(3) as Time, id)
                })
                .collect();
            keys.sort_by_key(|k| (Reverse(k.0), k.1));
            let mut seen = 0;
            let asked = std::cell::Cell::new(false);
            place_sorted(
                (&probes, &names),
                &keys,
                |key| {
                    asked.set(true);
                    order_of(&key.2)
                },
                |key, at| {
                    let searched = interval_of(&probes, &names, key.0, key.1, || order_of(&key.2));
                    assert_eq!(at, searched, "{key:?} among {probes:?}");
                    let tied = probes
                        .iter()
                        .any(|p| (p.priority, p.submit_at) == key.key());
                    assert_eq!(asked.replace(false), tied, "{key:?}");
                    ties += usize::from(tied);
                    seen += 1;
                },
            );
            assert_eq!(seen, keys.len());
        }
        assert!(ties > 0, "no key tied with a probe");
    }
}
