//! The engine's reads of the tree: the derived facts worker 0 keeps
//! (`graph::FactStore`) and the users' factors the queue keeps, assembled
//! into an [`EngineTree`] in sshare order and turned into the fair-share
//! table by [`crate::fairshare::table`]. The whole table ([`Engine::tree`],
//! [`Engine::fairshare_table`]) is read in one pass over the sshare order
//! (kept while the tree's shape is), worker 0 answering each node's facts
//! at its index in that order, the names borrowed from the tree feed (a
//! name is copied once, into the row that answers; the history's step
//! reads it with each user row's pending jobs placed by the same order,
//! [`Engine::fairshare_table_with_pending`]); `explain`'s rows
//! ([`Engine::fairshare_path`]) read only
//! the associations on the path from `root` to the user (a few facts and
//! one factor), so they cost what the path's depth costs, not the tree's
//! size. Under `DEPTH_OBLIVIOUS` a row also needs its fair-share siblings'
//! usage, which no path holds: there the path is cut from the whole table.
//! `audit`'s rows ([`Engine::usage_rows`]) take only each node's subtree
//! usage from worker 0 and build no tree: each row straight from the order
//! and the feed, its names kept in place (`report::Name`).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use fairflow_book::AssocKey;
use fairflow_model::report::{FairshareRow, FairshareTable, UsageRow};
use fairflow_model::Algorithm;

use super::{Engine, EngineError};
use crate::fairshare::{raw_columns, EngineTree, TreeNode};
use crate::graph::ListedFacts;
use crate::types::{AssocId, NodeId, ROOT};
use crate::worker::{Command, Reply};

/// Nodes in sshare order: `(node, depth, index of its parent)`.
type Order = Vec<(NodeId, usize, Option<usize>)>;

/// Where each node of an [`Order`] is in it: dense by node id for the
/// whole tree, a short list for a path (no allocation of the tree's size).
enum Slots {
    Dense(Vec<Option<usize>>),
    Path(Vec<NodeId>),
}

impl Slots {
    fn of(order: &Order, nodes: usize) -> Slots {
        if order.len() * 64 < nodes {
            return Slots::Path(order.iter().map(|&(id, _, _)| id).collect());
        }
        let mut index_of = vec![None; nodes];
        for (index, &(id, _, _)) in order.iter().enumerate() {
            index_of[id as usize] = Some(index);
        }
        Slots::Dense(index_of)
    }

    fn slot(&self, node: NodeId) -> Option<usize> {
        match self {
            Slots::Dense(index_of) => index_of.get(node as usize).copied().flatten(),
            Slots::Path(ids) => ids.iter().position(|&id| id == node),
        }
    }
}

/// A tree's nodes in sshare order, where each is in it, and the nodes
/// alone (the list worker 0 answers the facts of, by index).
pub(super) struct TreeOrder {
    order: Order,
    slots: Slots,
    ids: Arc<[NodeId]>,
}

impl TreeOrder {
    fn new(order: Order, nodes: usize) -> TreeOrder {
        let slots = Slots::of(&order, nodes);
        let ids = order.iter().map(|&(id, _, _)| id).collect();
        TreeOrder { order, slots, ids }
    }
}

impl Engine {
    fn read_facts(&self, nodes: Arc<[NodeId]>) -> Result<ListedFacts, EngineError> {
        self.send(Command::ReadFactsOf(nodes))?;
        match self.reply() {
            Ok(Reply::Facts(facts)) => Ok(facts),
            _ => Err(EngineError::WorkersGone),
        }
    }

    fn read_factors(&self, command: Command) -> Result<BTreeMap<AssocId, f64>, EngineError> {
        self.send(command)?;
        match self.reply() {
            Ok(Reply::Factors(factors)) => Ok(factors),
            _ => Err(EngineError::WorkersGone),
        }
    }

    /// Every live association in sshare order ([`Engine::build_sshare_order`]),
    /// kept while the tree's shape is (`TreeFeed::shape_version`): a read
    /// after a usage or share change does not sort the users again.
    fn sshare_order(&self) -> Arc<TreeOrder> {
        let version = self.tree_feed.shape_version();
        let mut kept = self
            .sshare_order
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((kept_version, order)) = kept.as_ref() {
            if *kept_version == version {
                return Arc::clone(order);
            }
        }
        let order = Arc::new(TreeOrder::new(
            self.build_sshare_order(),
            self.tree_feed.names().len(),
        ));
        *kept = Some((version, Arc::clone(&order)));
        order
    }

    /// Every live association in sshare order: an account, its users by
    /// name, then its child accounts by name (the book's accounts, in name
    /// order, as last sent).
    fn build_sshare_order(&self) -> Order {
        let feed = &self.tree_feed;
        let names = feed.names();
        let mut child_accounts: Vec<Vec<NodeId>> = vec![Vec::new(); names.len()];
        for name in self.book.state().accounts.keys() {
            let id = feed
                .id_of(&AssocKey::account(name))
                .expect("every account was sent");
            if let Some(parent) = feed.sent_parent(id) {
                child_accounts[parent as usize].push(id);
            }
        }
        // Each account's live users, by name: the feed's users are kept
        // by (account, user), so each account's come in name order.
        let mut users_of: Vec<Vec<NodeId>> = vec![Vec::new(); names.len()];
        for &id in feed.users().values() {
            if let Some(parent) = feed.sent_parent(id) {
                users_of[parent as usize].push(id);
            }
        }
        let mut order: Order = Vec::with_capacity(names.len());
        let mut stack: Order = vec![(ROOT, 0, None)];
        while let Some((account, depth, parent)) = stack.pop() {
            let index = order.len();
            order.push((account, depth, parent));
            let users = &users_of[account as usize];
            debug_assert!(users.is_sorted_by_key(|&u| &names[u as usize].user));
            order.extend(users.iter().map(|&user| (user, depth + 1, Some(index))));
            for &child in child_accounts[account as usize].iter().rev() {
                stack.push((child, depth + 1, Some(index)));
            }
        }
        order
    }

    /// The tree of the nodes `order` lists (each node's parent listed
    /// before it), with their facts from the dataflow.
    fn tree_of(&self, tree_order: &TreeOrder) -> Result<EngineTree<'_>, EngineError> {
        let feed = &self.tree_feed;
        let names = feed.names();
        let (order, slots) = (&tree_order.order, &tree_order.slots);
        let facts = self.read_facts(Arc::clone(&tree_order.ids))?;
        let nodes = crate::fairshare::build_rows(order.len(), |at| {
            let (id, depth, parent) = order[at];
            let record = &names[id as usize];
            // A fair-share parent is an ancestor: listed before the node.
            let fact = &facts.0[at];
            let fs_parent = fact.fs_parent.and_then(|p| slots.slot(p));
            let level = fs_parent.map_or(0, |p| facts.0[p].level_shares);
            TreeNode {
                account: &record.account,
                user: record.user.as_deref(),
                depth,
                parent,
                fs_parent,
                shares: feed.sent_shares(id).expect("a live association was sent"),
                level_shares: u64::try_from(level).expect("level shares are non-negative"),
                usage: fact.usage(),
                tickets: fact.tickets,
            }
        });
        Ok(EngineTree {
            nodes,
            frame: self.book.state().frame,
            as_of: self.now(),
        })
    }

    /// The tree with every derived value read from the dataflow's results:
    /// fair-share parents, level shares and subtree usage.
    pub fn tree(&self) -> Result<EngineTree<'_>, EngineError> {
        self.tree_of(&self.sshare_order())
    }

    /// Every association's place, shares and usage in sshare order (the
    /// table's columns that need no factor and no algorithm: `audit`'s),
    /// each row straight from the order, the feed and its subtree usage
    /// (no tree of every column built first).
    pub fn usage_rows(&self) -> Result<Vec<UsageRow>, EngineError> {
        let tree_order = self.sshare_order();
        let facts = self.read_facts(Arc::clone(&tree_order.ids))?;
        let (feed, order) = (&self.tree_feed, &tree_order.order);
        let names = feed.names();
        let tres_secs = self.book.state().frame.tres_secs_at(self.now());
        Ok(crate::fairshare::build_rows(order.len(), |at| {
            let (id, depth, _) = order[at];
            let record = &names[id as usize];
            let shares = feed.sent_shares(id).expect("a live association was sent");
            let (raw_shares, raw_usage) = raw_columns(at, shares, tres_secs(facts.0[at].usage()));
            UsageRow {
                account: record.account.as_str().into(),
                user: record.user.as_deref().map(Into::into),
                depth,
                raw_shares,
                raw_usage,
            }
        }))
    }

    /// Each listed node's factor (users: the dataflow's, 0 if it has none).
    fn factors_of(&self, order: &Order, factor_of: impl Fn(AssocId) -> Option<f64>) -> Vec<f64> {
        order
            .iter()
            .map(|&(id, _, _)| {
                self.tree_feed
                    .assoc_id(id)
                    .and_then(&factor_of)
                    .unwrap_or(0.0)
            })
            .collect()
    }

    /// The fair-share table under the configured algorithm, as of the last
    /// batch: the per-association columns from the tree, the users' factors
    /// and the tickets from the dataflow.
    pub fn fairshare_table(&self) -> Result<FairshareTable, EngineError> {
        Ok(self.fairshare_table_in_order()?.0)
    }

    /// [`Engine::fairshare_table`] with the order its rows are in.
    fn fairshare_table_in_order(&self) -> Result<(FairshareTable, Arc<TreeOrder>), EngineError> {
        self.send(Command::ReadFactorTable)?;
        let Ok(Reply::FactorTable(dense)) = self.reply() else {
            return Err(EngineError::WorkersGone);
        };
        let order = self.sshare_order();
        let tree = self.tree_of(&order)?;
        let factors = self.factors_of(&order.order, |assoc| {
            dense.get(assoc as usize).copied().flatten()
        });
        let table = crate::fairshare::table(&tree, self.config(), &factors);
        Ok((table, order))
    }

    /// [`Engine::fairshare_table`] and, beside each row, its user
    /// association's pending (ranked) jobs (0 on account rows): the counts
    /// of `pending_jobs_by_user` placed by the rows' order, so that no name
    /// is copied or hashed to join them (the fair-share history's step).
    pub fn fairshare_table_with_pending(&self) -> Result<(FairshareTable, Vec<u64>), EngineError> {
        let (table, order) = self.fairshare_table_in_order()?;
        let by_assoc = self.pending_jobs_by_assoc()?;
        let pending = order
            .order
            .iter()
            .map(|&(id, _, _)| {
                self.tree_feed
                    .assoc_id(id)
                    .and_then(|assoc| by_assoc.get(assoc as usize).copied())
                    .unwrap_or(0)
            })
            .collect();
        Ok((table, pending))
    }

    /// The rows from `root` down to the user association `(account, user)`
    /// (empty when it is not in the tree), equal to the whole table's
    /// (`FairshareTable::path_to`), read from the path's nodes only (but
    /// under `DEPTH_OBLIVIOUS`: see the module documentation).
    pub fn fairshare_path(
        &self,
        account: &str,
        user: &str,
    ) -> Result<Vec<FairshareRow>, EngineError> {
        if self.config().algorithm() == Algorithm::DepthOblivious {
            return Ok(self.fairshare_table()?.path_to(account, user));
        }
        let Some(order) = self.path_order(account, user) else {
            return Ok(Vec::new());
        };
        let feed = &self.tree_feed;
        let assocs = order.iter().filter_map(|&(id, _, _)| feed.assoc_id(id));
        let factors = self.read_factors(Command::ReadFactorsOf(assocs.collect()))?;
        let order = TreeOrder::new(order, feed.names().len());
        let tree = self.tree_of(&order)?;
        let factors = self.factors_of(&order.order, |assoc| factors.get(&assoc).copied());
        Ok(crate::fairshare::table(&tree, self.config(), &factors).rows)
    }

    /// The path from `root` to a live user association, root first, in the
    /// sshare order's terms (`None`: no such live association).
    fn path_order(&self, account: &str, user: &str) -> Option<Order> {
        let feed = &self.tree_feed;
        let key = (account.to_string(), user.to_string());
        let mut chain = vec![*feed.users().get(&key)?];
        // Each step goes one level up: a live node's chain reaches root
        // within as many steps as there are nodes.
        for _ in 0..feed.names().len() {
            let &node = chain.last()?;
            if node == ROOT {
                break;
            }
            chain.push(feed.sent_parent(node)?);
        }
        if chain.last() != Some(&ROOT) {
            return None;
        }
        chain.reverse();
        Some(
            chain
                .iter()
                .enumerate()
                .map(|(depth, &id)| (id, depth, depth.checked_sub(1)))
                .collect(),
        )
    }

    /// Each user association's fair-share factor, `(account, user) -> factor`,
    /// as the dataflow maintains it (and the priorities use it).
    pub fn user_factors(&self) -> Result<BTreeMap<(String, String), f64>, EngineError> {
        Ok(self
            .read_factors(Command::ReadFactors)?
            .into_iter()
            .filter_map(|(assoc, factor)| Some((self.names.assocs.name(assoc)?.clone(), factor)))
            .collect())
    }
}
