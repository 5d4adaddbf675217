//! The ranked pending queue as an index: an arrangement of queue entries
//! pinned to worker 0, read between steps with a cursor. An entry is any
//! totally ordered key whose ascending order is the scheduling order (for
//! example `(Reverse(priority), submit_at, job)`), so the first `k` live
//! entries are the top `k`. An update costs O(log n) amortised inside the
//! arrangement; a read costs O(k + retractions not yet compacted); nothing
//! runs per query.
//!
//! # Contract
//! - Build the index with [`pinned_index`] on every worker (all workers must
//!   build identical dataflows); only worker 0's trace holds entries.
//! - Read with [`first_live`] on worker 0 only, after the probe on
//!   `arranged.stream` has passed the time you want to read.
//! - Advance the trace's compaction frontiers every round (see
//!   [`advance_compaction`]), or it keeps all history.

use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::cursor::{cursor_list, Cursor};
use differential_dataflow::trace::implementations::{KeyBatcher, KeySpine};
use differential_dataflow::trace::TraceReader;
use differential_dataflow::{ExchangeData, VecCollection};
use timely::dataflow::channels::pact::Exchange;
use timely::progress::frontier::{Antichain, AntichainRef};

/// The logical time of the engine: one per batch.
pub type Time = u64;

/// The trace of a pinned queue index.
pub type QueueTrace<K> = TraceAgent<KeySpine<K, Time, isize>>;

/// Arrange `entries` as one sorted index held by worker 0.
pub fn pinned_index<'scope, K>(
    entries: VecCollection<'scope, Time, K, isize>,
    name: &str,
) -> Arranged<'scope, QueueTrace<K>>
where
    K: ExchangeData,
{
    let pairs = entries.map(|entry| (entry, ()));
    arrange_core::<_, _, KeyBatcher<K, Time, isize>, _>(
        pairs.inner,
        Exchange::new(|_: &((K, ()), Time, isize)| 0u64),
        name,
        KeyBatcher::new,
    )
}

/// The first `n` entries whose accumulated multiplicity is positive, in
/// order, as of everything the trace has (call after the probe passed).
pub fn first_live<K>(trace: &mut QueueTrace<K>, n: usize) -> Vec<K>
where
    K: ExchangeData,
{
    let mut upper = Antichain::new();
    trace.read_upper(&mut upper);
    let Some(batches) = trace.batches_through(upper.borrow()) else {
        return Vec::new();
    };
    let (mut cursor, storage) = cursor_list(batches);
    // `n` may be `usize::MAX` (every live entry): reserve only a little.
    let mut out = Vec::with_capacity(n.min(64));
    while out.len() < n {
        let Some(key) = cursor.get_key(&storage) else {
            break;
        };
        let mut count = 0isize;
        cursor.map_times(&storage, |_, diff| count += *diff);
        if count > 0 {
            out.push(key.clone());
        }
        cursor.step_key(&storage);
    }
    out
}

/// Let the trace forget history before `time` (both compaction frontiers).
pub fn advance_compaction<K>(trace: &mut QueueTrace<K>, time: Time)
where
    K: ExchangeData,
{
    trace.set_logical_compaction(AntichainRef::new(&[time]));
    trace.set_physical_compaction(AntichainRef::new(&[time]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use differential_dataflow::input::Input;
    use std::cmp::Reverse;
    use std::collections::BTreeSet;
    use timely::dataflow::operators::Probe;

    type Entry = (Reverse<u32>, u32);

    /// Rounds of inserts and retractions; worker 0 reads the top 5 after each.
    fn run(workers: usize) -> Vec<Vec<Entry>> {
        let guards = timely::execute(timely::Config::process(workers), |worker| {
            let index = worker.index();
            let probe = timely::dataflow::operators::probe::Handle::new();
            let (mut input, mut trace) = worker.dataflow::<Time, _, _>(|scope| {
                let (input, entries) = scope.new_collection::<Entry, isize>();
                let arranged = pinned_index(entries, "TestQueue");
                arranged.stream.probe_with(&probe);
                (input, arranged.trace)
            });
            let mut reads = Vec::new();
            let mut live: Vec<Entry> = Vec::new();
            let mut seed = 7u64;
            for round in 1..=30u64 {
                if index == 0 {
                    for _ in 0..20 {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let value = ((seed >> 33) % 50) as u32;
                        if (seed >> 20).is_multiple_of(3) && !live.is_empty() {
                            let gone = live.swap_remove((value as usize) % live.len());
                            input.remove(gone);
                        } else {
                            let entry = (Reverse(value), (seed >> 40) as u32 % 1000);
                            live.push(entry);
                            input.insert(entry);
                        }
                    }
                }
                input.advance_to(round);
                input.flush();
                worker.step_while(|| probe.less_than(&round));
                if index == 0 {
                    reads.push(first_live(&mut trace, 5));
                }
                advance_compaction(&mut trace, round);
            }
            (index, reads, live)
        })
        .unwrap();
        let mut results: Vec<_> = guards.join().into_iter().map(Result::unwrap).collect();
        results.sort_by_key(|(i, _, _)| *i);
        let (_, reads, _) = results.remove(0);
        reads
    }

    fn expected() -> Vec<Vec<Entry>> {
        // The same pseudo-random rounds, kept in a multiset by hand.
        let mut live: Vec<Entry> = Vec::new();
        let mut seed = 7u64;
        let mut out = Vec::new();
        for _ in 1..=30u64 {
            for _ in 0..20 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let value = ((seed >> 33) % 50) as u32;
                if (seed >> 20).is_multiple_of(3) && !live.is_empty() {
                    live.swap_remove((value as usize) % live.len());
                } else {
                    live.push((Reverse(value), (seed >> 40) as u32 % 1000));
                }
            }
            let distinct: BTreeSet<Entry> = live.iter().copied().collect();
            out.push(distinct.into_iter().take(5).collect());
        }
        out
    }

    #[test]
    fn the_pinned_index_reads_the_top_entries_with_one_and_two_workers() {
        let want = expected();
        assert_eq!(run(1), want);
        assert_eq!(run(2), want);
    }
}
