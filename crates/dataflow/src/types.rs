//! The types every part of the incremental engine shares: logical time, the
//! diff types, the interned ids, and the arrangement alias; one place, so
//! that no module reaches into another for a type.

use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ValSpine;

/// Logical time: one per batch.
pub type Epoch = u64;

/// The diff of the tree half's collections: `i128`, so that usage travels
/// in the diff and is summed exactly.
pub type Diff = i128;

/// The diff of the priority half's collections (counts only).
pub type Count = isize;

/// An interned association: an account or a user association.
pub type NodeId = u32;

/// `root`'s id.
pub const ROOT: NodeId = 0;

/// An interned job (see `names::JobIds`).
pub type JobId = u32;

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
