//! Fair Tree under Slurm's tie rule (`FairTreeTies=slurm`, the default),
//! kept in the queue as the sorted tree itself instead of a rank per user:
//! the dataflow sends each association's [`TreeSlot`] (its group, its
//! weight and its [`SlurmPlacement`] there) and the queue derives a user's
//! rank when it needs one, by walking the user's fair-share ancestors.
//!
//! # Why
//! A usage event moves an account in its sibling order and so shifts the
//! rank of every user placed between its old and new positions; with ranks
//! materialised per user, each of those users' factors is an update. Kept
//! as placements, the same event changes the placements of the members that
//! moved in the groups on its path (`O(depth)` groups), and no user entry.
//!
//! # The search ([`FairTree`] with `queue::Candidates`)
//! Per group and rank class, the members by the best job key (without the
//! fair-share term) in their subtree; an account's best is its group's
//! first. A top-k read is a best-first search down the tree: a member is
//! bounded by its subtree's best key plus `w_fs` times its first user's
//! factor (at first by its group's bound, tightened when it reaches the top
//! of the heap), and a user's jobs are read with its exact factor. An
//! account's first user is kept per account ([`FirstUser`], refreshed up
//! the tree as groups settle), so tightening a member reads it instead of
//! walking down. A job event changes `O(depth)` subtree maxima.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use fairflow_model::formula::rank_factor;

use crate::types::{grow, AssocId, JobId, NodeId, ROOT};

mod group;
mod moved;
mod placement;
mod subtree_jobs;
mod walk_all;

use group::{Group, Ranked as GroupRanked};
pub use moved::{reordered_groups, Reordered};
pub use placement::{enters_tied, SlotPlacement, SlurmPlacement, TreeSlot};
use placement::{run_tied, walk, walk_from_run, walk_in_group, Walk};
pub use subtree_jobs::SubtreeJobs;

/// The first user below an account, as Slurm's walk reaches it from the
/// start of the account's group: what [`FairTree::first_user_factor`]
/// needs, kept per account as groups settle instead of walked down at
/// each read (the search tightens hundreds of accounts per read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FirstUser {
    /// Positions from the group's start to the start of the first user's
    /// run of tied users.
    run_offset: u64,
    /// Is that run tied to the user before it, when the group is entered
    /// untied (`[0]`) or tied (`[1]`)?
    run_tied: [bool; 2],
}

/// The best job of a subtree in one rank class: `(key_hi, job)`.
pub type Best = (u64, JobId);

/// A member of a group as the search reads it: its node, its placement and
/// its user association if it is a user.
pub type GroupMember = (NodeId, SlurmPlacement, Option<AssocId>);

/// The sorted tree; see the module documentation.
#[derive(Debug, Default)]
pub struct FairTree {
    /// Per node, what the tree keeps of it.
    nodes: Vec<NodeState>,
    /// A user association's node.
    node_of: Vec<Option<NodeId>>,
    groups: Vec<Group>,
    users: u64,
}

/// What the tree keeps per node, side by side: the search reads a
/// member's slot, its best jobs and its first user together, so they
/// share its cache lines instead of one line in each of four vectors.
#[derive(Debug, Default, Clone)]
struct NodeState {
    slot: Option<TreeSlot>,
    /// The group whose ranked sets hold the node's best (may lag `slot`
    /// inside [`FairTree::apply`]).
    attached: Option<NodeId>,
    /// Per class, the best job in its subtree.
    best: [Option<Best>; 2],
    /// An account's first user ([`FirstUser`]; `None`: none placed),
    /// refreshed up the tree from each group settled.
    first_user: Option<FirstUser>,
    /// Per class, the ranked jobs in its subtree ([`SubtreeJobs`]).
    jobs: [SubtreeJobs; 2],
}

impl FairTree {
    /// Is any user placed (Fair Tree with Slurm's ties in force)?
    pub fn is_active(&self) -> bool {
        self.users > 0
    }

    /// How many users are placed (the walk's positions).
    pub fn placed_users(&self) -> u64 {
        self.users
    }

    /// The node of a placed user association.
    pub fn node_of(&self, assoc: AssocId) -> Option<NodeId> {
        self.node_of.get(assoc as usize).copied().flatten()
    }

    /// The users a group's members stand for (its block of positions).
    pub fn group_users(&self, group: NodeId) -> u64 {
        self.groups.get(group as usize).map_or(0, Group::users)
    }

    /// Is a placed node a user association?
    pub fn is_user(&self, node: NodeId) -> bool {
        self.slot(node).is_some_and(|slot| slot.assoc.is_some())
    }

    /// The group of a placed user association (its fair-share parent).
    pub fn group_of_user(&self, assoc: AssocId) -> Option<NodeId> {
        Some(self.slot(self.node_of(assoc)?)?.group)
    }

    fn slot(&self, node: NodeId) -> Option<&TreeSlot> {
        self.nodes.get(node as usize)?.slot.as_ref()
    }

    /// Apply consolidated slot updates, sorted by node; returns the
    /// entries changed and the user associations placed or unplaced: the
    /// caller sets their best jobs ([`FairTree::set_user_best`]) or enters
    /// them in its user order. A node whose slot moves within its group (a
    /// retraction of its slot and one insertion, same group and
    /// association: most of a usage batch) is moved in place; it stays
    /// attached and its user is neither unplaced nor re-entered. Otherwise
    /// its retraction is applied before its insertion. The result does not
    /// depend on the order of the nodes: a position is unmapped only by the
    /// node it maps to, and mapped to the node placed there.
    pub fn apply(&mut self, updates: &[(NodeId, TreeSlot, isize)]) -> (u64, Vec<AssocId>) {
        debug_assert!(updates.windows(2).all(|pair| pair[0].0 <= pair[1].0));
        let mut changed = 0u64;
        let mut touched: Vec<NodeId> = Vec::new();
        let mut moved_users: Vec<AssocId> = Vec::new();
        // The groups whose positions changed, settled after the slots.
        let mut unsettled: Vec<NodeId> = Vec::new();
        for run in updates.chunk_by(|a, b| a.0 == b.0) {
            let node = run[0].0;
            let current = self.slot(node).copied();
            let retracted = run
                .iter()
                .any(|&(_, slot, diff)| diff < 0 && Some(slot) == current);
            let mut inserted = run.iter().filter(|(_, _, diff)| *diff > 0);
            match (current, inserted.next(), inserted.next()) {
                (Some(old), Some(&(_, new, _)), None)
                    if retracted && old.group == new.group && old.assoc == new.assoc =>
                {
                    self.move_in_place(node, &old, new, &mut unsettled);
                    touched.push(node);
                    continue;
                }
                _ => {}
            }
            if retracted {
                self.unplace(node, &mut moved_users, &mut unsettled);
                touched.push(node);
            }
            for (_, slot, _) in run.iter().filter(|(_, _, diff)| *diff > 0) {
                if self.slot(node).is_some() {
                    self.unplace(node, &mut moved_users, &mut unsettled);
                }
                grow(&mut self.nodes, node as usize).slot = Some(*slot);
                self.position_change(slot, node, true, &mut unsettled);
                if let Some(assoc) = slot.assoc {
                    *grow(&mut self.node_of, assoc as usize) = Some(node);
                    self.users += 1;
                    moved_users.push(assoc);
                }
                touched.push(node);
            }
        }
        for &group in &unsettled {
            self.groups[group as usize].settle();
        }
        for group in unsettled {
            self.refresh_first_users(group);
        }
        // In node order already; one entry per association whose slot changed.
        touched.dedup();
        changed += touched.len() as u64;
        for node in touched {
            let want = self.slot(node).map(|slot| slot.group);
            let have = self.nodes.get(node as usize).and_then(|n| n.attached);
            if want == have {
                continue;
            }
            if let Some(group) = have {
                changed += self.detach(node, group);
            }
            if let Some(group) = want {
                changed += self.attach(node, group);
            }
        }
        (changed, moved_users)
    }

    /// Replace a placed node's slot by one in the same group for the same
    /// association: only its position in the group moves.
    fn move_in_place(
        &mut self,
        node: NodeId,
        old: &TreeSlot,
        new: TreeSlot,
        unsettled: &mut Vec<NodeId>,
    ) {
        self.position_change(old, node, false, unsettled);
        self.position_change(&new, node, true, unsettled);
        self.nodes[node as usize].slot = Some(new);
    }

    /// Note that `node` takes (`placed`) or leaves the label of `slot` in
    /// its group, applied when the group is settled.
    fn position_change(
        &mut self,
        slot: &TreeSlot,
        node: NodeId,
        placed: bool,
        unsettled: &mut Vec<NodeId>,
    ) {
        let pending = &mut grow(&mut self.groups, slot.group as usize).pending;
        if pending.is_empty() {
            unsettled.push(slot.group);
        }
        pending.push((slot.placement.label, node, slot.weight, placed));
    }

    /// Take a node's slot out (its attachment is settled by the caller).
    fn unplace(
        &mut self,
        node: NodeId,
        moved_users: &mut Vec<AssocId>,
        unsettled: &mut Vec<NodeId>,
    ) {
        let Some(old) = self.nodes[node as usize].slot.take() else {
            return;
        };
        self.position_change(&old, node, false, unsettled);
        if let Some(assoc) = old.assoc {
            if self.node_of(assoc) == Some(node) {
                self.node_of[assoc as usize] = None;
            }
            self.users -= 1;
            moved_users.push(assoc);
        }
    }

    fn detach(&mut self, node: NodeId, group: NodeId) -> u64 {
        let mut changed = 0;
        self.carry_member_jobs(node, group, false);
        self.nodes[node as usize].attached = None;
        for class in 0..2 {
            if let Some((key, job)) = self.best_of(node, class) {
                let kept = &mut self.groups[group as usize];
                kept.ranked_accounts[class].remove(&(Reverse(key), job, node));
                let set = &mut kept.ranked[class];
                set.remove(&(Reverse(key), job, node));
                let first = set.first().map(|&(Reverse(k), j, _)| (k, j));
                changed += 1 + self.set_best(group, class, first);
            }
        }
        changed
    }

    fn attach(&mut self, node: NodeId, group: NodeId) -> u64 {
        let mut changed = 0;
        grow(&mut self.nodes, node as usize).attached = Some(group);
        self.carry_member_jobs(node, group, true);
        grow(&mut self.groups, group as usize);
        let account = !self.is_user(node);
        for class in 0..2 {
            if let Some((key, job)) = self.best_of(node, class) {
                let kept = &mut self.groups[group as usize];
                if account {
                    kept.ranked_accounts[class].insert((Reverse(key), job, node));
                }
                let set = &mut kept.ranked[class];
                set.insert((Reverse(key), job, node));
                let first = set.first().map(|&(Reverse(k), j, _)| (k, j));
                changed += 1 + self.set_best(group, class, first);
            }
        }
        changed
    }

    /// The best job in a node's subtree, per class.
    pub fn best_of(&self, node: NodeId, class: usize) -> Option<Best> {
        self.nodes.get(node as usize)?.best[class]
    }

    /// Set a placed user association's best job in `class`; returns the
    /// entries changed up the tree.
    pub fn set_user_best(&mut self, assoc: AssocId, class: usize, best: Option<Best>) -> u64 {
        match self.node_of(assoc) {
            Some(node) => self.set_best(node, class, best),
            None => 0,
        }
    }

    /// Set a node's best and carry the change up its groups.
    fn set_best(&mut self, mut node: NodeId, class: usize, mut new: Option<Best>) -> u64 {
        let mut changed = 0;
        loop {
            let slot = &mut grow(&mut self.nodes, node as usize).best[class];
            let old = *slot;
            if old == new {
                return changed;
            }
            *slot = new;
            changed += 1;
            let Some(group) = self.nodes.get(node as usize).and_then(|n| n.attached) else {
                return changed;
            };
            let account = !self.is_user(node);
            let kept = &mut self.groups[group as usize];
            if account {
                let accounts = &mut kept.ranked_accounts[class];
                if let Some((key, job)) = old {
                    accounts.remove(&(Reverse(key), job, node));
                }
                if let Some((key, job)) = new {
                    accounts.insert((Reverse(key), job, node));
                }
            }
            let set = &mut kept.ranked[class];
            if let Some((key, job)) = old {
                set.remove(&(Reverse(key), job, node));
            }
            if let Some((key, job)) = new {
                set.insert((Reverse(key), job, node));
            }
            new = set.first().map(|&(Reverse(k), j, _)| (k, j));
            node = group;
        }
    }

    /// A group's members with a job in `class`, best first (by the best
    /// job key in their subtree), with that best `(key, job)`. A member's
    /// placement is read only when it is opened ([`FairTree::member`]): a
    /// search peeks at each open group's next member for its bound and
    /// opens few of them.
    pub fn members(
        &self,
        group: NodeId,
        class: usize,
    ) -> impl Iterator<Item = (NodeId, Best)> + '_ {
        self.ranked_members(group, move |g| &g.ranked[class])
    }

    /// [`FairTree::members`] that are accounts (not users), best first.
    pub fn account_members(
        &self,
        group: NodeId,
        class: usize,
    ) -> impl Iterator<Item = (NodeId, Best)> + '_ {
        self.ranked_members(group, move |g| &g.ranked_accounts[class])
    }

    /// The entries of one of a group's ranked sets (`set`), in order.
    fn ranked_members<'t>(
        &'t self,
        group: NodeId,
        set: impl Fn(&'t Group) -> &'t BTreeSet<GroupRanked> + 't,
    ) -> impl Iterator<Item = (NodeId, Best)> + 't {
        self.groups
            .get(group as usize)
            .into_iter()
            .flat_map(move |g| set(g).iter())
            .map(|&(Reverse(key), job, node)| (node, (key, job)))
    }

    /// A placed member as the search opens it: its index in its group's
    /// order and `(member, its placement, its user association if a user)`.
    pub fn member(&self, node: NodeId) -> Option<(usize, GroupMember)> {
        let slot = self.slot(node)?;
        let group = self.groups.get(slot.group as usize)?;
        let at = group.index_of(slot.placement.label);
        Some((at, (node, self.placement_in(group, at, slot), slot.assoc)))
    }

    /// The member at `index` of a group's order as the search opens it
    /// (`None`: past the last member, or not placed).
    pub fn member_at(&self, group: NodeId, index: usize) -> Option<GroupMember> {
        let members = self.groups.get(group as usize)?;
        let &(_, node, _) = members.by_label.get(index)?;
        let slot = self.slot(node)?;
        Some((node, self.placement_in(members, index, slot), slot.assoc))
    }

    /// How many members a group has (placed or not yet settled out).
    pub fn group_len(&self, group: NodeId) -> usize {
        self.groups
            .get(group as usize)
            .map_or(0, |g| g.by_label.len())
    }

    /// A placed member's [`SlurmPlacement`], from its slot and its group's
    /// members by label (see the module documentation).
    pub fn placement(&self, node: NodeId) -> Option<SlurmPlacement> {
        let slot = self.slot(node)?;
        let group = self.groups.get(slot.group as usize)?;
        Some(self.placement_in(group, group.index_of(slot.placement.label), slot))
    }

    /// The [`SlurmPlacement`] of the member whose slot is `slot`, at `at`
    /// in `group`'s order.
    fn placement_in(&self, group: &Group, at: usize, slot: &TreeSlot) -> SlurmPlacement {
        let sent = slot.placement;
        let (prefix, first) = (group.users_before(at), at == 0);
        let (run_prefix, run_first, run_local_tie) = if !sent.user || sent.run_label == sent.label {
            // An account, or a user that starts its own run.
            (prefix, first, sent.local_tie)
        } else {
            let run_at = group.index_of(sent.run_label);
            let run_tie = group
                .by_label
                .get(run_at)
                .filter(|&&(label, _, _)| label == sent.run_label)
                .and_then(|&(_, run_first_user, _)| self.slot(run_first_user))
                .is_some_and(|run_slot| run_slot.placement.local_tie);
            (group.users_before(run_at), run_at == 0, run_tie)
        };
        SlurmPlacement {
            prefix,
            first,
            local_tie: sent.local_tie,
            run_prefix,
            run_first,
            run_local_tie,
            user: sent.user,
            parent_account: sent.parent_account,
        }
    }

    /// The user at a position of the walk.
    fn user_at(&self, position: u64) -> Option<NodeId> {
        let (mut group, mut start) = (ROOT, 0u64);
        for _ in 0..=self.nodes.len() {
            let within = position.checked_sub(start)?;
            let (prefix, member) = self.groups.get(group as usize)?.covering(within)?;
            let slot = self.slot(member)?;
            if slot.placement.user {
                return Some(member);
            }
            start += prefix;
            group = member;
        }
        None
    }

    /// A placed user's walk, from its chain of groups.
    fn walk_of(&self, user: NodeId) -> Option<Walk> {
        let own = self.slot(user)?;
        let mut chain: Vec<SlurmPlacement> = Vec::new();
        let mut group = own.group;
        while group != ROOT {
            let slot = self.slot(group)?;
            chain.push(self.placement(group)?);
            group = slot.group;
            if chain.len() > self.nodes.len() {
                return None;
            }
        }
        Some(walk(chain.into_iter().rev(), &self.placement(user)?))
    }

    /// A placed user's `j` (rank `N − j`), following references back.
    fn j_of(&self, user: NodeId) -> Option<u64> {
        let mut node = user;
        for _ in 0..=self.users {
            match self.walk_of(node)? {
                Walk::Resolved(j) => return Some(j),
                Walk::Refers(target) => node = self.user_at(target)?,
            }
        }
        None
    }

    /// A placed user's factor `rank / N`.
    pub fn factor_of_node(&self, user: NodeId) -> Option<f64> {
        let j = self.j_of(user)?;
        Some(rank_factor(self.users.saturating_sub(j), self.users))
    }

    /// A lower bound of the factors of the users standing in the block of
    /// `users` walk positions from `start`: the factor of its last position
    /// (ranks never increase along the walk; a user tied to one before it
    /// takes that one's higher rank).
    pub fn lowest_factor_in_block(&self, start: u64, users: u64) -> f64 {
        let last = (start + users).saturating_sub(1);
        rank_factor(self.users.saturating_sub(last), self.users)
    }

    /// The factor of the user at a position of the walk: the highest factor
    /// of the subtree whose first user stands there.
    pub fn factor_at(&self, position: u64) -> Option<f64> {
        self.factor_of_node(self.user_at(position)?)
    }

    /// The factor of a user placed `own` in a group that starts at
    /// `group_start` and was entered `entered_tied` (what a walk down the
    /// tree knows when it reaches the user: no walk back up, unless the user
    /// takes a tied predecessor's rank).
    pub fn factor_in_group(
        &self,
        group_start: u64,
        entered_tied: bool,
        own: &SlurmPlacement,
    ) -> Option<f64> {
        match walk_in_group(group_start, entered_tied, own) {
            Walk::Resolved(j) => Some(rank_factor(self.users.saturating_sub(j), self.users)),
            Walk::Refers(target) => self.factor_at(target),
        }
    }

    /// The factor of the first user below an account whose group starts at
    /// `start` and is entered `entered_tied`: the highest factor of its
    /// subtree ([`FairTree::factor_at`] of `start`, found from the
    /// account's kept [`FirstUser`] instead of walking from the root).
    pub fn first_user_factor(
        &self,
        account: NodeId,
        start: u64,
        entered_tied: bool,
    ) -> Option<f64> {
        let first = self.nodes.get(account as usize)?.first_user?;
        let tied = first.run_tied[usize::from(entered_tied)];
        match walk_from_run(start + first.run_offset, tied) {
            Walk::Resolved(j) => Some(rank_factor(self.users.saturating_sub(j), self.users)),
            Walk::Refers(target) => self.factor_at(target),
        }
    }

    /// An account's first user from its group's first positioned member:
    /// that user's run, or the member account's own [`FirstUser`] entered
    /// as Slurm's walk enters it.
    fn first_user_below(&self, account: NodeId) -> Option<FirstUser> {
        let (prefix, member) = self.groups.get(account as usize)?.first_positioned()?;
        let placement = self.placement(member)?;
        if placement.user {
            // A user's own prefix is not part of its group's start.
            return Some(FirstUser {
                run_offset: placement.run_prefix,
                run_tied: [false, true].map(|entered| run_tied(&placement, entered)),
            });
        }
        let below = self.nodes.get(member as usize)?.first_user?;
        Some(FirstUser {
            run_offset: prefix + below.run_offset,
            run_tied: [false, true]
                .map(|entered| below.run_tied[usize::from(enters_tied(&placement, entered))]),
        })
    }

    /// Refresh the [`FirstUser`] of a settled group's account, and of its
    /// ancestors for as long as it changes. Any order of the settled groups
    /// ends exact: an account is refreshed after each change below it.
    fn refresh_first_users(&mut self, mut account: NodeId) {
        for _ in 0..=self.nodes.len() {
            let fresh = self.first_user_below(account);
            let kept = &mut grow(&mut self.nodes, account as usize).first_user;
            if *kept == fresh {
                return;
            }
            *kept = fresh;
            match self.slot(account) {
                Some(slot) if account != ROOT => account = slot.group,
                _ => return,
            }
        }
    }

    /// [`FairTree::first_user_factor`] by walking down the first positioned
    /// members (the definition the kept [`FirstUser`]s must agree with).
    #[cfg(test)]
    pub fn first_user_factor_walked(
        &self,
        account: NodeId,
        start: u64,
        entered_tied: bool,
    ) -> Option<f64> {
        let (mut group, mut start, mut tied) = (account, start, entered_tied);
        for _ in 0..=self.nodes.len() {
            let (prefix, member) = self.groups.get(group as usize)?.first_positioned()?;
            let placement = self.placement(member)?;
            if placement.user {
                return self.factor_in_group(start, tied, &placement);
            }
            start += prefix;
            tied = enters_tied(&placement, tied);
            group = member;
        }
        None
    }

    /// Check every account's kept [`FirstUser`] against the walk down from
    /// it, for a group entered at each of a few starts, tied or not.
    #[cfg(test)]
    pub fn assert_first_users_fresh(&self) {
        for account in 0..self.groups.len() as NodeId {
            for start in [0, 1, 7] {
                for tied in [false, true] {
                    assert_eq!(
                        self.first_user_factor(account, start, tied),
                        self.first_user_factor_walked(account, start, tied),
                        "the first user below account node {account} (start {start}, tied {tied})"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::group::{Group, PositionChange, Positioned};
    use super::FairTree;
    use crate::tests::random_tree::RandomTree;
    use crate::types::{NodeId, ROOT};

    #[test]
    fn kept_first_users_equal_the_walk_down_as_the_tree_changes() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _tree in 0..40 {
            let mut random = RandomTree::new(&mut seed, 40);
            let mut tree = FairTree::default();
            for _round in 0..30 {
                tree.apply(&random.updates());
                tree.assert_first_users_fresh();
                if random.has_users() {
                    assert!(tree.first_user_factor(ROOT, 0, false).is_some());
                }
                random.move_some(&mut seed);
            }
        }
    }

    /// A group's members after pending changes, applied one at a time to a
    /// map as the changes say: a member placed at a label takes it; a
    /// removal takes a label out only if it still maps to that member.
    fn applied_one_at_a_time(
        before: &BTreeMap<u64, (NodeId, u64)>,
        changes: &[PositionChange],
    ) -> Vec<Positioned> {
        let mut members = before.clone();
        for &(label, node, weight, placed) in changes {
            if placed {
                members.insert(label, (node, weight));
            } else if members
                .get(&label)
                .is_some_and(|&(member, _)| member == node)
            {
                members.remove(&label);
            }
        }
        members
            .into_iter()
            .map(|(label, (node, weight))| (label, node, weight))
            .collect()
    }

    #[test]
    fn settling_a_group_equals_applying_its_changes_one_at_a_time() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut random = |bound: u64| crate::tests::random_tree::xorshift(&mut seed, bound);
        let mut group = Group::default();
        let mut model: BTreeMap<u64, (NodeId, u64)> = BTreeMap::new();
        for round in 0..3_000 {
            // Few changes (one by one) and many (the merge), over few
            // labels and members so that they collide: a member placed and
            // removed in one round, two members at one label, a removal of
            // a member a label no longer maps to. Weights 0 to 3 (members
            // that stand for no user included).
            let count = if round % 3 == 0 {
                1 + random(4)
            } else {
                random(40)
            };
            let span = 1 + random(30);
            let base: u64 = if round % 7 == 0 { u64::MAX - 40 } else { 0 };
            let changes: Vec<PositionChange> = (0..count)
                .map(|_| {
                    let label = base + random(span);
                    (label, random(12) as NodeId, random(4), random(5) < 2)
                })
                .collect();
            let expected = applied_one_at_a_time(&model, &changes);
            group.pending = changes;
            group.settle();
            assert!(group.pending.is_empty());
            assert_eq!(group.by_label, expected, "round {round}");
            // The users before each member, summed by hand.
            let mut users = 0;
            let mut users_before = vec![0];
            for &(_, _, weight) in &expected {
                users += weight;
                users_before.push(users);
            }
            assert_eq!(group.users_before, users_before, "round {round}");
            let first_positioned = expected
                .iter()
                .find(|&&(_, _, weight)| weight > 0)
                .map(|&(_, node, _)| (0, node));
            assert_eq!(group.first_positioned(), first_positioned);
            // Each user position is covered by the member standing there.
            let mut before = 0;
            for &(_, node, weight) in &expected {
                for within in before..before + weight {
                    assert_eq!(group.covering(within), Some((before, node)));
                }
                before += weight;
            }
            assert_eq!(group.covering(before), None);
            model = expected
                .into_iter()
                .map(|(label, node, weight)| (label, (node, weight)))
                .collect();
        }
    }
}
