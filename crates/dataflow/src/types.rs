//! The types every part of the incremental engine shares: logical time, the
//! diff types, the interned ids (and [`grow`], for state kept by id; a set
//! of job ids, [`JobIdSet`]), the arrangement alias and the touched-records
//! counter; one place, so
//! that no module reaches into another for a type.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ValSpine;

/// Logical time: one per batch.
pub type Epoch = u64;

/// The diff of the tree half's collections: `i128`, so that usage travels
/// in the diff and is summed exactly.
pub type Diff = i128;

/// Usage in frame units, the model's decayed-usage unit: every usage the
/// dataflow holds is this, never a bare integer.
pub use fairflow_model::usage::FrameUsage;

/// Usage in frame units as it travels in a collection's diff ([`Diff`]):
/// signed, a change or a sum of changes (a subtree's usage).
pub type SignedFrameUsage = i128;

/// The diff of the priority half's collections (counts only).
pub type Count = isize;

/// An interned association: an account or a user association.
pub type NodeId = u32;

/// `root`'s id.
pub const ROOT: NodeId = 0;

/// An interned job (see `names::JobIds`).
pub type JobId = u32;

/// A set of job ids as bits (a look-up without a search).
#[derive(Debug, Clone, Default)]
pub struct JobIdSet(Vec<u64>);

impl JobIdSet {
    /// The set of `ids`.
    pub fn of(ids: &[JobId]) -> Self {
        let words = ids.iter().max().map_or(0, |&max| max as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for &id in ids {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        JobIdSet(bits)
    }

    /// Is `id` in the set?
    pub fn contains(&self, id: JobId) -> bool {
        (self.0.get(id as usize / 64)).is_some_and(|word| word & (1 << (id % 64)) != 0)
    }
}

/// An interned account name.
pub type AccountId = u32;

/// An interned user association `(account, user)`.
pub type AssocId = u32;

/// An interned partition or QOS name; [`NONE`] is "none" (`""`).
pub type NameId = u32;

/// The id of the empty name (a job without a partition or QOS).
pub const NONE: NameId = 0;

/// A collection arranged by its key (time [`Epoch`], diff [`Diff`]): built
/// once and shared by every operator that joins on that key.
pub type ByKey<'s, K, V> = Arranged<'s, TraceAgent<ValSpine<K, V, Epoch, Diff>>>;

/// Counts the updates leaving the dataflow's stages and the queue (all
/// workers of a process share one), for the benchmark's touched records.
#[derive(Debug, Clone, Default)]
pub struct TouchCounter(Arc<AtomicU64>);

impl TouchCounter {
    /// A counter at 0.
    pub fn new() -> Self {
        TouchCounter::default()
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// The count so far, resetting it to 0.
    pub fn take(&self) -> u64 {
        self.0.swap(0, Ordering::Relaxed)
    }

    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

/// `vec[index]`, growing `vec` with defaults to reach it: the state kept by
/// an interned id (ids are dense) is a vector indexed by it.
pub(crate) fn grow<T: Default>(vec: &mut Vec<T>, index: usize) -> &mut T {
    if vec.len() <= index {
        vec.resize_with(index + 1, T::default);
    }
    &mut vec[index]
}
