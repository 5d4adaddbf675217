//! A member's place in its group as the queue's Fair Tree reads it
//! ([`TreeSlot`], with the dataflow's [`SlotPlacement`] and the derived
//! [`SlurmPlacement`]), and Slurm's walk from placements to a user's rank.
//!
//! # Ranks from placements (the definition is the oracle's
//! `fair_tree_slurm`; the derivation was the dataflow's walk)
//! For a user under fair-share ancestors `a_1 .. a_k` (top first), its group
//! starts at `start = Σ prefix(a_i)` and its position is `p = start +
//! prefix`; a group is entered tied when its account is tied
//! (`local_tie || (first && entered tied)`). Slurm gives the user rank
//! `N − j` with `j = start + run_prefix` (the first user of its run of tied
//! users) unless that user is tied, in which case it takes the rank last
//! assigned: that of the user at position `start + run_prefix − 1` (none
//! before it: `j = 0`). So ranks never increase along the walk, and the
//! users of one subtree occupy one contiguous block of positions: a
//! subtree's highest rank is its first user's.

use crate::types::{AssocId, NodeId};

/// Where a member stands in its group, for Slurm's walk (derived from the
/// group's labels and the member's [`SlotPlacement`]).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct SlurmPlacement {
    /// Users in the members before it.
    pub prefix: u64,
    /// Is it the group's first member?
    pub first: bool,
    /// Is its `LevelFS` equal to the previous member's (`NO_VAL` for the first)?
    pub local_tie: bool,
    /// A user: `prefix` of the first user of its run of tied users.
    pub run_prefix: u64,
    /// A user: is the first user of its run the group's first member?
    pub run_first: bool,
    /// A user: is the first user of its run tied to its predecessor?
    pub run_local_tie: bool,
    /// Is it a user association?
    pub user: bool,
    /// Is it a `FairShare=parent` account (not a fair-share ancestor)?
    pub parent_account: bool,
}

/// Where a member stands in its group, as the dataflow sends it: what
/// changes only when the member moves or its neighbours change.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct SlotPlacement {
    /// Its order label: a group's members in Slurm's sibling order have
    /// increasing labels (unique in the group).
    pub label: u64,
    /// Is its `LevelFS` equal to the previous member's (`NO_VAL` for the first)?
    pub local_tie: bool,
    /// A user: the label of the first user of its run of tied users (an
    /// account: its own label).
    pub run_label: u64,
    /// Is it a user association?
    pub user: bool,
    /// Is it a `FairShare=parent` account (not a fair-share ancestor)?
    pub parent_account: bool,
}

/// One association's place in the sorted tree, as the dataflow sends it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct TreeSlot {
    /// Its group: its fair-share parent.
    pub group: NodeId,
    /// The users it stands for (a user 1, an account the users below it, a
    /// `FairShare=parent` account 0: its users are members of its parent's group).
    pub weight: u64,
    /// Its placement in the group.
    pub placement: SlotPlacement,
    /// A user association: its interned name (what job rows carry).
    pub assoc: Option<AssocId>,
}

/// A user's place in Slurm's walk: resolved (rank `N − j`) or the rank of
/// the user at an earlier position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Walk {
    Resolved(u64),
    Refers(u64),
}

/// Slurm's walk for a user: its ancestors' placements (top first, `parent`
/// accounts never among them) and its own.
pub(super) fn walk(ancestors: impl Iterator<Item = SlurmPlacement>, own: &SlurmPlacement) -> Walk {
    let (mut start, mut entered_tied) = (0u64, false);
    for ancestor in ancestors {
        entered_tied = enters_tied(&ancestor, entered_tied);
        start += ancestor.prefix;
    }
    walk_in_group(start, entered_tied, own)
}

/// Is the group of an account placed `account` entered tied, when the group
/// the account stands in was entered `parent_tied`?
pub fn enters_tied(account: &SlurmPlacement, parent_tied: bool) -> bool {
    account.local_tie || (account.first && parent_tied)
}

/// The walk of a user placed `own` in a group starting at `start`, entered
/// tied or not.
pub(super) fn walk_in_group(start: u64, entered_tied: bool, own: &SlurmPlacement) -> Walk {
    let run_start = start + own.run_prefix;
    walk_from_run(run_start, run_tied(own, entered_tied))
}

/// Is the run of a user placed `own` tied, in a group entered tied or not?
pub(super) fn run_tied(own: &SlurmPlacement, entered_tied: bool) -> bool {
    own.run_local_tie || (own.run_first && entered_tied)
}

/// The walk of a user whose run of tied users starts at `run_start`, tied
/// to the user before it or not.
pub(super) fn walk_from_run(run_start: u64, run_tied: bool) -> Walk {
    match run_start.checked_sub(1) {
        // Tied to the user just before the run: its rank.
        Some(before) if run_tied => Walk::Refers(before),
        // Tied with nobody before it: the top rank.
        None if run_tied => Walk::Resolved(0),
        _ => Walk::Resolved(run_start),
    }
}
