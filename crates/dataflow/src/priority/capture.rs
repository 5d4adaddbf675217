//! Where the priority dataflows' updates land: each job row on its job's
//! shard ([`shard_key`]), contexts and facts on every worker, handed to the
//! worker's [`Capture`] for its reader; and the capture operators the tree
//! half uses too ([`capture_on_every_worker`], [`capture_on_worker_0`]).

use std::sync::Arc;

use differential_dataflow::VecCollection;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, ParallelizationContract, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::StreamVec;

use super::combo::{Combo, JobContext};
use super::inputs::JobRow;
use super::queue::Capture;
use crate::types::Epoch;

/// Where the priority dataflow's outputs are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sharding {
    /// Rows on their job's shard ([`shard_key`]), contexts and facts on
    /// every worker (the engine).
    ByShardKey,
    /// Everything on worker 0 (the crate's own tests of the stages, which
    /// read one queue on worker 0 whatever the number of workers).
    #[cfg(test)]
    OnWorkerZero,
}

/// The rows dataflow's one stage: every job row update goes to its shard
/// ([`shard_key`]; worker 0 with `sharding` `OnWorkerZero`) and into
/// `capture` there, where the reader meets it with its combination's
/// context. Returns the stream to probe.
pub(crate) fn capture_rows<'s>(
    rows: VecCollection<'s, Epoch, JobRow, isize>,
    capture: &Capture,
    sharding: Sharding,
) -> StreamVec<'s, Epoch, ()> {
    let sink = capture.clone();
    let sink = move |data: &mut Vec<RowUpdate>| {
        let mut captured = sink.borrow_mut();
        captured.note_pending(data.iter().map(|(_, time, _)| *time));
        captured.rows.append(data);
    };
    match sharding {
        Sharding::ByShardKey => capture_with(
            rows.inner,
            Exchange::new(|(row, _, _): &RowUpdate| shard_key(row)),
            "CaptureRows",
            sink,
        ),
        #[cfg(test)]
        Sharding::OnWorkerZero => capture_with(
            rows.inner,
            Exchange::new(|_: &RowUpdate| 0u64),
            "CaptureRows",
            sink,
        ),
    }
}

/// The shard a job's records live on, as a key for timely's exchange
/// (`key % workers`): its user association, mixed, so that consecutive ids
/// spread; under Moab its user's name, so that a user's running totals
/// (summed over every job of the user, whatever the account) are read on
/// one shard. Every record of one user association is on one shard, so its
/// ranked jobs and best keys are local.
pub fn shard_key(row: &JobRow) -> u64 {
    use std::hash::{Hash, Hasher};
    match &row.moab {
        Some(moab) => {
            // `DefaultHasher::new` has fixed keys: the same key in every
            // process of one binary.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            moab.user.hash(&mut hasher);
            hasher.finish()
        }
        None => u64::from(row.assoc).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17,
    }
}

/// A job row's update at one logical time.
pub(crate) type RowUpdate = (JobRow, Epoch, isize);

/// A combination's context's update at one logical time.
pub(crate) type ContextUpdate = ((Combo, Arc<JobContext>), Epoch, isize);

/// Send every update to every worker (each shard needs every factor, the
/// sorted tree and the context: one fact per association at most, small
/// against jobs) and hand each arriving batch to `sink` (see
/// [`capture_with`]). With one worker, nothing moves.
pub(crate) fn capture_on_every_worker<'s, D: differential_dataflow::ExchangeData>(
    updates: StreamVec<'s, Epoch, (D, Epoch, isize)>,
    name: &str,
    sink: impl FnMut(&mut Vec<(D, Epoch, isize)>) + 'static,
) -> StreamVec<'s, Epoch, ()> {
    let updates = if updates.scope().peers() > 1 {
        updates.broadcast()
    } else {
        updates
    };
    capture_with(updates, Pipeline, name, sink)
}

/// Send every update to worker 0 (where the driver's reads of the tree are
/// served) and hand each arriving batch to `sink` there (see
/// [`capture_with`]).
pub(crate) fn capture_on_worker_0<'s, D: differential_dataflow::ExchangeData>(
    updates: StreamVec<'s, Epoch, (D, Epoch, isize)>,
    name: &str,
    sink: impl FnMut(&mut Vec<(D, Epoch, isize)>) + 'static,
) -> StreamVec<'s, Epoch, ()> {
    let route = Exchange::new(|_: &(D, Epoch, isize)| 0u64);
    capture_with(updates, route, name, sink)
}

/// Move `updates` by `pact` and hand each arriving batch to `sink` on the
/// worker it reaches; the returned (empty) stream passes a time once every
/// update up to it was handed over, so a probe on it says when every
/// worker's capture is complete.
fn capture_with<'s, D, P>(
    updates: StreamVec<'s, Epoch, D>,
    pact: P,
    name: &str,
    mut sink: impl FnMut(&mut Vec<D>) + 'static,
) -> StreamVec<'s, Epoch, ()>
where
    D: Clone + 'static,
    P: ParallelizationContract<Epoch, Vec<D>>,
{
    updates.unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(pact, name, |_capability, _info| {
        move |input, _output| {
            input.for_each(|_time, data| sink(data));
        }
    })
}
