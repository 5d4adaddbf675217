//! A member in its group's order ([`Placed`]): its sort key in Slurm's
//! sibling order, how its `LevelFS` follows its parent's usage
//! ([`Scaling`], which makes a pair of members scale-safe), and placing a
//! group's members in order ([`Placing`]).

use std::cmp::Ordering;

use fairflow_model::formula::{
    share_fraction, slurm_level_fs_of, slurm_sibling_order, SLURM_PARENT_ACCOUNT_LEVEL_FS,
};
use fairflow_model::Shares;

use crate::factors::groups::{Member, Own};
use crate::priority::fair_tree::{SlotPlacement, TreeSlot};
use crate::types::{FrameUsage, NodeId};

/// Slurm's `LevelFS` of a member (`FairShare=parent`: a user `+inf`, an
/// account `NO_VAL`), from its share fraction and both usages already
/// converted to `f64` (`formula::slurm_level_fs_of`).
fn member_level_fs(member: &Member, share_fraction: f64, usage: f64, parent_usage: f64) -> f64 {
    if member.shares.is_parent() {
        if member.user {
            f64::INFINITY
        } else {
            SLURM_PARENT_ACCOUNT_LEVEL_FS
        }
    } else {
        slurm_level_fs_of(share_fraction, usage, parent_usage)
    }
}

/// A member in its group's order: its sort key and the placement sent.
#[derive(Clone, Copy)]
pub(super) struct Placed {
    pub(super) node: NodeId,
    /// Its fair-share parent (whose part gives its level shares and its
    /// parent's usage).
    pub(super) parent: NodeId,
    pub(super) member: Member,
    /// Its own usage as `f64` and its share fraction (of its level
    /// shares), kept so that a move of its parent's usage re-derives its
    /// `LevelFS` with two divisions.
    pub(super) usage_f64: f64,
    pub(super) share_fraction: f64,
    /// How its `LevelFS` follows its parent's usage (from the two above).
    pub(super) scaling: Scaling,
    pub(super) level_fs: f64,
    /// Its order label (0: none yet; see `assign_labels`).
    pub(super) label: u64,
    /// Does it keep its label (`assign_labels`: a kept member whose
    /// order did not change)?
    pub(super) anchored: bool,
    /// The placement last sent (none yet: a member new to the group).
    pub(super) sent: Option<TreeSlot>,
}

impl Placed {
    pub(super) fn new(node: NodeId, parent: NodeId, own: Own, part: (FrameUsage, u64)) -> Placed {
        let member = Member::of(own, part);
        let usage_f64 = member.usage as f64;
        let share_fraction = share_fraction(member.shares.raw(), member.level_shares);
        Placed {
            node,
            parent,
            member,
            usage_f64,
            share_fraction,
            scaling: Scaling::of(&member, share_fraction, usage_f64),
            level_fs: member_level_fs(&member, share_fraction, usage_f64, part.0 as f64),
            label: 0,
            anchored: false,
            sent: None,
        }
    }

    /// Its key in `slurm_sibling_order`.
    pub(super) fn order_key(&self) -> (f64, bool, u64) {
        (self.level_fs, self.member.user, u64::from(self.node))
    }

    /// Bring its `LevelFS` to its parent's current part, if it was derived
    /// at another (`usage_f64`: the usage converted).
    pub(super) fn bring_to(&mut self, part: (FrameUsage, u64), usage_f64: f64) {
        if part != (self.member.parent_usage, self.member.level_shares) {
            self.repart(part, usage_f64);
        }
    }

    /// Its parent's part moved to `(usage, level shares)` (`usage_f64`:
    /// the usage converted): re-derive its `LevelFS`.
    pub(super) fn repart(&mut self, (usage, level_shares): (FrameUsage, u64), usage_f64: f64) {
        if level_shares != self.member.level_shares {
            self.member.level_shares = level_shares;
            self.share_fraction = share_fraction(self.member.shares.raw(), level_shares);
            self.scaling = Scaling::of(&self.member, self.share_fraction, self.usage_f64);
        }
        self.member.parent_usage = usage;
        self.level_fs =
            member_level_fs(&self.member, self.share_fraction, self.usage_f64, usage_f64);
    }
}

/// Slurm's sibling order (`slurm_sibling_order`: `LevelFS` descending,
/// users first, newest first). Total: ties end at the node id.
pub(super) fn sibling_order(a: &Placed, b: &Placed) -> Ordering {
    slurm_sibling_order(a.order_key(), b.order_key())
}

/// The smallest `Own` (a lower bound of a node's member items).
pub(super) const LEAST_OWN: Own = Own {
    shares: Shares::Value(0),
    usage: 0,
    user: false,
    assoc: None,
    weight: 0,
};

/// How a member's `LevelFS` follows its parent's usage `P > 0`: a constant
/// (`FairShare=parent`; no shares: 0; no usage: `+inf`), or
/// `share fraction / (usage / P)`, the ratio `share fraction / usage`
/// scaled by `P` (within a few ulps).
#[derive(Clone, Copy)]
pub(super) enum Scaling {
    Constant(f64),
    Ratio(f64),
}

impl Scaling {
    pub(super) fn of(member: &Member, share_fraction: f64, usage_f64: f64) -> Scaling {
        if member.shares.is_parent() {
            Scaling::Constant(member_level_fs(member, 0.0, 0.0, 0.0))
        } else if share_fraction == 0.0 {
            Scaling::Constant(0.0)
        } else if usage_f64 == 0.0 {
            Scaling::Constant(f64::INFINITY)
        } else {
            Scaling::Ratio(share_fraction / usage_f64)
        }
    }
}

/// How far apart two members' ratios must be for every positive parent
/// usage to order them as the ratios do and never tie them: far beyond the
/// few ulps by which `f64` rounding can move a `LevelFS`.
pub(super) const SCALE_MARGIN: f64 = 1e-9;

/// Does `a`, placed just before `b`, stay before it, tied exactly as now,
/// at every positive usage of their parent? Constants keep their order;
/// `+inf` stays above and 0 below every ratio; a finite constant (a
/// `FairShare=parent` account's `NO_VAL`) can be crossed by a ratio; two
/// members with the same share fraction and usage always tie; other ratios
/// keep their order if they are more than `SCALE_MARGIN` apart.
pub(super) fn pair_scale_safe(a: &Placed, b: &Placed) -> bool {
    match (a.scaling, b.scaling) {
        (Scaling::Constant(_), Scaling::Constant(_)) => true,
        (Scaling::Constant(x), Scaling::Ratio(_)) => x == f64::INFINITY,
        (Scaling::Ratio(_), Scaling::Constant(y)) => y == 0.0,
        (Scaling::Ratio(x), Scaling::Ratio(y)) => {
            (a.share_fraction == b.share_fraction && a.usage_f64 == b.usage_f64)
                || x > y * (1.0 + SCALE_MARGIN)
        }
    }
}

/// Placing the members of one group, in Slurm's sibling order: the
/// previous member's `LevelFS` and kind, and the label of the first user of
/// the current run of tied users.
pub(super) struct Placing {
    group: NodeId,
    prev: f64,
    prev_user: bool,
    run_label: u64,
}

impl Placing {
    pub(super) fn new(group: NodeId) -> Self {
        Placing {
            group,
            prev: SLURM_PARENT_ACCOUNT_LEVEL_FS,
            prev_user: false,
            run_label: 0,
        }
    }

    /// Placing from just after `previous`, whose slot (as sent) is right.
    pub(super) fn after(group: NodeId, previous: &Placed) -> Self {
        let sent = previous.sent.expect("a kept member was placed");
        Placing {
            group,
            prev: previous.level_fs,
            prev_user: previous.member.user,
            run_label: sent.placement.run_label,
        }
    }

    /// The next member's slot (its label already assigned).
    pub(super) fn place(&mut self, placed: &Placed) -> TreeSlot {
        let (level_fs, member) = (placed.level_fs, &placed.member);
        let local_tie = self.prev == level_fs;
        if member.user && !(local_tie && self.prev_user) {
            self.run_label = placed.label;
        }
        let placement = SlotPlacement {
            label: placed.label,
            local_tie,
            run_label: if member.user {
                self.run_label
            } else {
                placed.label
            },
            user: member.user,
            parent_account: !member.user && member.shares.is_parent(),
        };
        self.prev = level_fs;
        self.prev_user = member.user;
        TreeSlot {
            group: self.group,
            weight: member.weight,
            placement,
            assoc: member.assoc,
        }
    }
}
