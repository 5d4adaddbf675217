//! The fair-share tree derived from the state, from scratch: nodes in tree
//! order, direct and fair-share parents (`FairShare=parent` moves children up
//! to the nearest ancestor that is not `parent`), sibling `level_shares`, and
//! every subtree's usage at the state's time, summed exactly in frame units.

use std::collections::BTreeMap;

use fairflow_model::usage::{DecayFrame, FrameUsage};
use fairflow_model::{Shares, Time};

use crate::State;

/// One association in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The account (for a user association, its account).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// Depth in the direct tree; root is 0.
    pub depth: usize,
    /// The direct parent; `None` for root.
    pub parent: Option<usize>,
    /// The fair-share parent: the nearest proper ancestor whose shares are
    /// not `parent`; `None` for root.
    pub fs_parent: Option<usize>,
    /// Children in the fair-share tree, in tree order (a `parent` account
    /// appears among its fs-parent's children and has none of its own).
    pub fs_children: Vec<usize>,
    /// Direct children, in tree order (users by name, then accounts by name).
    pub children: Vec<usize>,
    /// `FairShare`.
    pub shares: Shares,
    /// The sum of the raw shares of this node's fair-share sibling group
    /// (itself included; `parent` siblings add 0). 0 for root.
    pub level_shares: u64,
    /// The subtree's usage at the tree's time, in frame units.
    pub usage: FrameUsage,
}

impl Node {
    /// Is this a user association?
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }
}

/// The whole tree; `nodes[0]` is root and the order is sshare's tree order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// Nodes in tree order.
    pub nodes: Vec<Node>,
    /// The frame usage is expressed in.
    pub frame: DecayFrame,
    /// The time usage is taken at.
    pub as_of: Time,
}

impl Tree {
    /// Derive the tree from the state at `state.now`.
    pub fn build(state: &State) -> Tree {
        let mut nodes = Vec::new();
        // Child accounts by parent, each list in name order (accounts iterate sorted).
        let mut child_accounts: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (name, account) in &state.accounts {
            if let Some(parent) = account.parent.as_deref() {
                child_accounts.entry(parent).or_default().push(name);
            }
        }
        // Depth-first, each account then its users then its child accounts,
        // with an explicit stack (any depth, no recursion): children are
        // pushed in reverse name order so they pop in name order.
        let mut stack: Vec<(&str, usize, Option<usize>)> = vec![("root", 0, None)];
        while let Some((account, depth, parent)) = stack.pop() {
            let record = &state.accounts[account];
            let index = nodes.len();
            nodes.push(Node {
                account: account.to_string(),
                user: None,
                depth,
                parent,
                fs_parent: None,
                fs_children: Vec::new(),
                children: Vec::new(),
                shares: record.shares,
                level_shares: 0,
                usage: 0,
            });
            if let Some(p) = parent {
                nodes[p].children.push(index);
            }
            let users = state
                .users
                .range((account.to_string(), String::new())..)
                .take_while(|((a, _), _)| a == account);
            for ((_, user), assoc) in users {
                let u = nodes.len();
                nodes.push(Node {
                    account: account.to_string(),
                    user: Some(user.clone()),
                    depth: depth + 1,
                    parent: Some(index),
                    fs_parent: None,
                    fs_children: Vec::new(),
                    children: Vec::new(),
                    shares: assoc.shares,
                    level_shares: 0,
                    usage: 0,
                });
                nodes[index].children.push(u);
            }
            for child in child_accounts.get(account).into_iter().flatten().rev() {
                stack.push((child, depth + 1, Some(index)));
            }
        }

        // Fair-share parents and children.
        for i in 1..nodes.len() {
            let mut p = nodes[i].parent.expect("non-root has a parent");
            while p != 0 && nodes[p].shares.is_parent() {
                p = nodes[p].parent.expect("non-root has a parent");
            }
            nodes[i].fs_parent = Some(p);
        }
        for i in 1..nodes.len() {
            let p = nodes[i].fs_parent.expect("set above");
            nodes[p].fs_children.push(i);
        }
        for p in 0..nodes.len() {
            let level: u64 = nodes[p]
                .fs_children
                .iter()
                .map(|&c| nodes[c].shares.raw())
                .sum();
            for c in nodes[p].fs_children.clone() {
                nodes[c].level_shares = level;
            }
        }

        // Usage: each association's own usage at `now`, summed up the direct tree.
        let (frame, now) = (state.frame, state.now);
        for node in nodes.iter_mut() {
            let own = match &node.user {
                None => state.accounts[&node.account].usage,
                Some(user) => state.users[&(node.account.clone(), user.clone())].usage,
            };
            node.usage = state.visible_usage(&own);
        }
        for i in (1..nodes.len()).rev() {
            let p = nodes[i].parent.expect("non-root has a parent");
            nodes[p].usage += nodes[i].usage;
        }
        Tree {
            nodes,
            frame,
            as_of: now,
        }
    }

    /// A node's usage in decayed TRES-seconds at the tree's time.
    pub fn usage_tres_secs(&self, index: usize) -> f64 {
        self.frame.to_tres_secs(self.nodes[index].usage, self.as_of)
    }

    /// The number of user associations (Fair Tree's N).
    pub fn user_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_user()).count()
    }

    /// The indices from root down to `index` (both included).
    pub fn path_from_root(&self, index: usize) -> Vec<usize> {
        let mut path = vec![index];
        let mut i = index;
        while let Some(p) = self.nodes[i].parent {
            path.push(p);
            i = p;
        }
        path.reverse();
        path
    }

    /// Find a user association.
    pub fn find_user(&self, account: &str, user: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.account == account && n.user.as_deref() == Some(user))
    }
}
