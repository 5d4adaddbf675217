//! Random sorted trees for the Fair Tree tests: every [`TreeSlot`] of a
//! random account tree whose siblings are ordered by a level (highest
//! first, equal levels tied), labelled in that order, as the placement
//! stage would send them (a fresh labelling each time: the tests compare
//! structures, not the order maintenance).

use crate::priority::fair_tree::{SlotPlacement, TreeSlot};
use crate::types::NodeId;

/// A small xorshift generator (the tests' own, seeded).
pub(crate) fn xorshift(seed: &mut u64, bound: u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed % bound
}

/// A random tree, its levels and the slots last sent for it.
pub(crate) struct RandomTree {
    /// `parents[i]`: the parent of node `i + 1` (an earlier node).
    pub parents: Vec<NodeId>,
    /// Which nodes are users (leaves; some leaves are accounts with no user).
    pub users: Vec<bool>,
    /// Each node's level among its siblings (0 to 3: ties are common).
    pub level: Vec<u64>,
    sent: Vec<(NodeId, TreeSlot)>,
}

impl RandomTree {
    /// A tree of 2 to `max_nodes + 1` nodes, nothing sent yet.
    pub(crate) fn new(seed: &mut u64, max_nodes: u64) -> Self {
        let nodes = 2 + xorshift(seed, max_nodes) as usize;
        let parents: Vec<NodeId> = (1..nodes)
            .map(|node| xorshift(seed, node as u64) as NodeId)
            .collect();
        let users: Vec<bool> = (0..nodes)
            .map(|node| node > 0 && !parents.contains(&(node as NodeId)) && xorshift(seed, 5) > 0)
            .collect();
        let level = (0..nodes).map(|_| xorshift(seed, 4)).collect();
        RandomTree {
            parents,
            users,
            level,
            sent: Vec::new(),
        }
    }

    /// Has it a user?
    pub(crate) fn has_users(&self) -> bool {
        self.users.contains(&true)
    }

    /// The slot updates from what was sent to the slots now, sorted by
    /// node (what changed retracted, its new slot inserted); noted as sent.
    pub(crate) fn updates(&mut self) -> Vec<(NodeId, TreeSlot, isize)> {
        let now = slots_of(&self.parents, &self.users, &self.level);
        let mut updates: Vec<(NodeId, TreeSlot, isize)> = Vec::new();
        for &(node, slot) in &self.sent {
            if !now.contains(&(node, slot)) {
                updates.push((node, slot, -1));
            }
        }
        for &(node, slot) in &now {
            if !self.sent.contains(&(node, slot)) {
                updates.push((node, slot, 1));
            }
        }
        updates.sort_by_key(|&(node, slot, diff)| (node, diff, slot));
        self.sent = now;
        updates
    }

    /// Move one to three members: their levels change (ties come and go).
    pub(crate) fn move_some(&mut self, seed: &mut u64) {
        let nodes = self.level.len() as u64;
        for _ in 0..1 + xorshift(seed, 3) {
            let node = 1 + xorshift(seed, nodes - 1) as usize;
            self.level[node] = xorshift(seed, 4);
        }
    }
}

/// Every slot of a random tree under `ROOT`: `parents[i]` is the parent
/// of node `i + 1` (an earlier node), `users` says which nodes are
/// users (leaves), `level[i]` orders siblings (highest first, equal
/// levels tied). Accounts with no user below stand for no user.
fn slots_of(parents: &[NodeId], users: &[bool], level: &[u64]) -> Vec<(NodeId, TreeSlot)> {
    let nodes = parents.len() + 1;
    let mut weight = vec![0u64; nodes];
    for node in (1..nodes).rev() {
        if users[node] {
            weight[node] = 1;
        }
        weight[parents[node - 1] as usize] += weight[node];
    }
    let mut out = Vec::new();
    for group in 0..nodes as NodeId {
        let mut members: Vec<NodeId> = (1..nodes as NodeId)
            .filter(|&n| parents[n as usize - 1] == group)
            .collect();
        members.sort_by_key(|&n| (std::cmp::Reverse(level[n as usize]), n));
        let mut run_label = 0;
        let mut previous: Option<u64> = None;
        for (at, &node) in members.iter().enumerate() {
            let label = (at as u64 + 1) * 16;
            let local_tie = previous == Some(level[node as usize]);
            let user = users[node as usize];
            if user && !(local_tie && previous_user(&members, at, users)) {
                run_label = label;
            }
            previous = Some(level[node as usize]);
            out.push((
                node,
                TreeSlot {
                    group,
                    weight: weight[node as usize],
                    placement: SlotPlacement {
                        label,
                        local_tie,
                        run_label: if user { run_label } else { label },
                        user,
                        parent_account: false,
                    },
                    assoc: user.then_some(node),
                },
            ));
        }
    }
    out.sort_by_key(|&(node, _)| node);
    out
}

/// Is the member before `at` a user?
fn previous_user(members: &[NodeId], at: usize, users: &[bool]) -> bool {
    at > 0 && users[members[at - 1] as usize]
}
