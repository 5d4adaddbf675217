//! Fair-share from the engine's tree: Fair Tree and classic (with its
//! depth-oblivious variant), as rows of a `FairshareTable` and per-user
//! factors. The per-node inputs (subtree usage, fair-share parents, level
//! shares) come from the dataflow's result arrangement; the per-node scalar
//! formulas are `fairflow_model::formula`'s, shared with the oracle, so the
//! results are bit-identical. The walks here (ranking, top-down effective
//! usage) are this crate's own.
//!
//! # Fair Tree ranking
//! The order inside each fair-share sibling group comes from the dataflow
//! (`Fact::Ranked`: a per-group `reduce` comparing `LevelFs` exactly); only
//! merged groups of tied accounts are ordered here. Every user association is ranked; `N` is their number and ranks count
//! down from `N`. A sibling group (the fair-share children of one node, or
//! the merged children of tied accounts) is sorted by exact `LF` descending,
//! users before accounts on equal `LF`, and consumed in blocks of equal `LF`:
//! the block's users share one rank (the counter's next value, or the last
//! assigned rank when the block is tied with what came just before: the
//! group was entered tied), each user still moving the counter; then the
//! block's accounts have their fair-share children merged into one group,
//! entered tied when the block had users or was itself entered tied.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use fairflow_model::formula::{
    classic_effective_usage, classic_factor, classic_norm_shares, depth_oblivious_effective_usage,
    level_fs_value, norm_usage, rank_factor, share_fraction, usage_ratio, LevelFs,
};
use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::{Algorithm, Config};

use crate::engine::EngineTree;

/// The per-node values an algorithm produces: the rows and the user factors.
struct Computed {
    rows: Vec<FairshareRow>,
    user_factors: BTreeMap<(String, String), f64>,
}

/// The algorithm is not maintained by this engine yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the incremental engine does not compute the {} algorithm yet", .0.name())]
pub struct Unsupported(pub Algorithm);

/// Does this engine maintain `algorithm` (Fair Tree, classic, depth-oblivious)?
pub fn supports(algorithm: Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::FairTree | Algorithm::Classic | Algorithm::DepthOblivious
    )
}

fn compute(tree: &EngineTree, config: &Config) -> Result<Computed, Unsupported> {
    let view = View::new(tree);
    match config.algorithm() {
        Algorithm::FairTree => Ok(fair_tree(&view)),
        Algorithm::Classic => Ok(classic(&view, config.dampening_factor, false)),
        Algorithm::DepthOblivious => Ok(classic(&view, config.dampening_factor, true)),
        other => Err(Unsupported(other)),
    }
}

/// The fair-share table under `config`'s algorithm.
pub fn table(tree: &EngineTree, config: &Config) -> Result<FairshareTable, Unsupported> {
    Ok(FairshareTable {
        algorithm: config.algorithm(),
        as_of: tree.as_of,
        rows: compute(tree, config)?.rows,
    })
}

/// Each user association's factor, `(account, user) -> factor`.
pub fn user_factors(
    tree: &EngineTree,
    config: &Config,
) -> Result<BTreeMap<(String, String), f64>, Unsupported> {
    Ok(compute(tree, config)?.user_factors)
}

/// The tree with its fair-share children lists.
struct View<'a> {
    tree: &'a EngineTree,
    fs_children: Vec<Vec<usize>>,
}

impl<'a> View<'a> {
    fn new(tree: &'a EngineTree) -> Self {
        let mut fs_children = vec![Vec::new(); tree.nodes.len()];
        for (index, node) in tree.nodes.iter().enumerate() {
            if let Some(p) = node.fs_parent {
                fs_children[p].push(index);
            }
        }
        View { tree, fs_children }
    }

    fn len(&self) -> usize {
        self.tree.nodes.len()
    }

    fn is_user(&self, index: usize) -> bool {
        self.tree.nodes[index].is_user()
    }

    fn is_parent_shares(&self, index: usize) -> bool {
        self.tree.nodes[index].shares.is_parent()
    }

    fn usage(&self, index: usize) -> u128 {
        self.tree.nodes[index].usage
    }

    fn user_count(&self) -> u64 {
        self.tree.nodes.iter().filter(|n| n.is_user()).count() as u64
    }

    /// Names, depth, RawShares (not on root), RawUsage (truncated).
    fn base_row(&self, index: usize) -> FairshareRow {
        let node = &self.tree.nodes[index];
        let mut row = FairshareRow::new(&node.account, node.user.as_deref(), node.depth);
        if index != 0 {
            row.raw_shares = Some(node.shares);
        }
        row.raw_usage = self.tree.frame.to_tres_secs(node.usage, self.tree.as_of) as u64;
        row
    }

    fn norm_usage(&self, index: usize) -> f64 {
        norm_usage(self.usage(index), self.usage(0))
    }

    fn user_key(&self, index: usize) -> Option<(String, String)> {
        let node = &self.tree.nodes[index];
        node.user.clone().map(|user| (node.account.clone(), user))
    }
}

/// Exact level fair-share for ranking; `None` for root and `parent` accounts.
fn level_fs_of(view: &View, index: usize) -> Option<LevelFs> {
    let node = &view.tree.nodes[index];
    let parent = node.fs_parent?;
    if node.shares.is_parent() {
        return view.is_user(index).then_some(LevelFs::Infinite);
    }
    Some(LevelFs::of(
        node.shares.raw(),
        node.level_shares,
        node.usage,
        view.usage(parent),
    ))
}

struct Ranking<'v, 'a> {
    view: &'v View<'a>,
    level_fs: Vec<Option<LevelFs>>,
    last_rank: u64,
    next_rank: u64,
    ranks: Vec<u64>,
}

impl Ranking<'_, '_> {
    /// The blocks of the group formed by the fair-share children of
    /// `accounts` (one account, or tied accounts whose children merge), each
    /// block users first. One account's order is the dataflow's; a merge
    /// compares children of different parents exactly.
    fn blocks(&self, accounts: &[usize]) -> Vec<Vec<(bool, usize)>> {
        let mut blocks: Vec<Vec<(bool, usize)>> = Vec::new();
        if let [account] = accounts {
            let mut last = None;
            for child in &self.view.tree.ranked_children[*account] {
                if last != Some(child.block) {
                    blocks.push(Vec::new());
                    last = Some(child.block);
                }
                if let Some(block) = blocks.last_mut() {
                    block.push((child.user, child.index));
                }
            }
            return blocks;
        }
        let mut ranked: Vec<(LevelFs, bool, usize)> = accounts
            .iter()
            .flat_map(|&a| self.view.fs_children[a].iter().copied())
            .filter_map(|m| self.level_fs[m].map(|lf| (lf, self.view.is_user(m), m)))
            .collect();
        ranked.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| b.1.cmp(&a.1))
                .then_with(|| a.2.cmp(&b.2))
        });
        for (i, &(lf, user, member)) in ranked.iter().enumerate() {
            if i == 0 || lf.cmp(&ranked[i - 1].0) != Ordering::Equal {
                blocks.push(Vec::new());
            }
            if let Some(block) = blocks.last_mut() {
                block.push((user, member));
            }
        }
        blocks
    }

    fn group(&mut self, accounts: &[usize], entered_tied: bool) {
        for (position, block) in self.blocks(accounts).into_iter().enumerate() {
            let mut tied = position == 0 && entered_tied;
            let mut tied_accounts = Vec::new();
            for (user, member) in block {
                if user {
                    if !tied {
                        self.last_rank = self.next_rank;
                    }
                    self.ranks[member] = self.last_rank;
                    self.next_rank = self.next_rank.saturating_sub(1);
                    tied = true;
                } else {
                    tied_accounts.push(member);
                }
            }
            if !tied_accounts.is_empty() {
                self.group(&tied_accounts, tied);
            }
        }
    }
}

fn fair_tree(view: &View) -> Computed {
    let n = view.user_count();
    let mut ranking = Ranking {
        view,
        level_fs: (0..view.len()).map(|i| level_fs_of(view, i)).collect(),
        last_rank: n,
        next_rank: n,
        ranks: vec![0; view.len()],
    };
    if view.len() > 0 {
        ranking.group(&[0], false);
    }
    let mut rows = Vec::with_capacity(view.len());
    let mut user_factors = BTreeMap::new();
    for (index, node) in view.tree.nodes.iter().enumerate() {
        let mut row = view.base_row(index);
        let Some(fs_parent) = node.fs_parent else {
            row.norm_shares = Some(0.0);
            row.effective_usage = Some(1.0);
            rows.push(row);
            continue;
        };
        let effective_usage = usage_ratio(node.usage, view.usage(fs_parent));
        // A `parent` association shows its fs-parent's share (root's is 0).
        let shown = if node.shares.is_parent() {
            fs_parent
        } else {
            index
        };
        row.norm_shares = Some(if shown == 0 {
            0.0
        } else {
            let shown = &view.tree.nodes[shown];
            share_fraction(shown.shares.raw(), shown.level_shares)
        });
        row.norm_usage = Some(view.norm_usage(index));
        row.effective_usage = Some(effective_usage);
        row.level_fs = match (node.shares.is_parent(), node.is_user()) {
            (true, true) => Some(f64::INFINITY),
            (true, false) => None,
            (false, _) => Some(level_fs_value(
                share_fraction(node.shares.raw(), node.level_shares),
                effective_usage,
            )),
        };
        if let Some(key) = view.user_key(index) {
            let factor = rank_factor(ranking.ranks[index], n);
            row.fairshare = Some(factor);
            user_factors.insert(key, factor);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}

fn classic(view: &View, dampening_factor: u32, depth_oblivious: bool) -> Computed {
    let count = view.len();
    let mut norm_shares = vec![1.0; count];
    let mut effective = vec![1.0; count];
    let norm_usages: Vec<f64> = (0..count).map(|i| view.norm_usage(i)).collect();
    // Top-down over the fair-share tree: every fs-parent precedes its
    // children in tree order (it is an ancestor).
    for index in 1..count {
        let node = &view.tree.nodes[index];
        let parent = node.fs_parent.unwrap_or(0);
        norm_shares[index] = if node.shares.is_parent() {
            norm_shares[parent]
        } else {
            classic_norm_shares(node.shares.raw(), node.level_shares, norm_shares[parent])
        };
        effective[index] = if parent == 0 {
            norm_usages[index]
        } else if node.shares.is_parent() {
            effective[parent]
        } else if depth_oblivious {
            let sibling_usage: u128 = view.fs_children[parent]
                .iter()
                .filter(|&&c| !view.is_parent_shares(c))
                .map(|&c| view.usage(c))
                .sum();
            depth_oblivious_effective_usage(
                norm_shares[index],
                norm_usages[index],
                norm_shares[parent],
                effective[parent],
                norm_usage(sibling_usage, view.usage(0)),
            )
        } else {
            classic_effective_usage(
                norm_usages[index],
                effective[parent],
                node.shares.raw(),
                node.level_shares,
            )
        };
    }
    let mut rows = Vec::with_capacity(count);
    let mut user_factors = BTreeMap::new();
    for index in 0..count {
        let mut row = view.base_row(index);
        row.norm_shares = Some(norm_shares[index]);
        row.effective_usage = Some(effective[index]);
        if index != 0 {
            row.norm_usage = Some(norm_usages[index]);
        }
        if let Some(key) = view.user_key(index) {
            // A `parent` user takes its fs-parent's values.
            let source = if view.is_parent_shares(index) {
                view.tree.nodes[index].fs_parent.unwrap_or(0)
            } else {
                index
            };
            let factor = classic_factor(effective[source], norm_shares[source], dampening_factor);
            row.fairshare = Some(factor);
            user_factors.insert(key, factor);
        }
        rows.push(row);
    }
    Computed { rows, user_factors }
}
