//! The fair-share table from the engine's tree: the per-association columns
//! under every algorithm (NormShares, NormUsage, EffectvUsage; LevelFS under
//! Fair Tree; FairShare `F` on every row under ticket-based, and on account
//! and root rows under classic and depth-oblivious; level value and
//! `fairshare_raw` under level-based), computed at read time from the
//! dataflow's per-node results (subtree usage, fair-share parents, level
//! shares, tickets) with the per-node formulas of `fairflow_model::formula`,
//! shared with the oracle so the cells are bit-identical. The users'
//! priority factors are not computed here: they come from the dataflow
//! ([`crate::factors`]), the same values the priorities use, and are the
//! FairShare column of users under Fair Tree, classic, depth-oblivious and
//! level-based. The ticket-based tickets are the dataflow's too.

use fairflow_model::formula::{
    classic_effective_usage, classic_factor, classic_norm_shares, depth_oblivious_effective_usage,
    level_bucket_value, level_fs_value, norm_usage, share_fraction, ticket_effective_usage,
    ticket_factor, usage_ratio, LevelLayout,
};
use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::usage::{DecayFrame, FrameUsage};
use fairflow_model::{Algorithm, Config, Shares, Time};
use rayon::prelude::*;

/// Whole-tree reads of at least this many rows build them on every core
/// (rayon's pool): each row is a function of per-node columns computed
/// before it, so the rows split freely. Smaller reads (a path, a small
/// cluster) stay on the calling thread: a hand-off to the pool costs more
/// than their rows.
pub const PARALLEL_ROWS_MIN: usize = 16_384;

/// `row_at(index)` for every index below `len`, in index order: on rayon's
/// pool from [`PARALLEL_ROWS_MIN`] rows, else on the calling thread.
pub fn build_rows<T: Send>(len: usize, row_at: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if len >= PARALLEL_ROWS_MIN {
        (0..len)
            .into_par_iter()
            .with_min_len(PARALLEL_ROWS_MIN / 4)
            .map(row_at)
            .collect()
    } else {
        (0..len).map(row_at).collect()
    }
}

/// One association of the tree as the engine derives it, in sshare tree
/// order; its names are the engine's own (borrowed: a read of the whole
/// tree copies no name until it builds the rows it answers with).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode<'a> {
    /// The account (for a user association, its account).
    pub account: &'a str,
    /// The user, for a user association.
    pub user: Option<&'a str>,
    /// Depth in the direct tree; root is 0.
    pub depth: usize,
    /// Index of the direct parent; `None` for root.
    pub parent: Option<usize>,
    /// Index of the fair-share parent (nearest proper ancestor not `parent`).
    pub fs_parent: Option<usize>,
    /// `FairShare`.
    pub shares: Shares,
    /// The raw shares of this node's fair-share sibling group (0 for root).
    pub level_shares: u64,
    /// The subtree's usage, frame units.
    pub usage: FrameUsage,
    /// Ticket-based: its tickets (0 when inactive or under another algorithm).
    pub tickets: u64,
}

impl TreeNode<'_> {
    /// Is this a user association?
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }
}

/// The tree read from the dataflow's results, with the frame and time its
/// usage is expressed in.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineTree<'a> {
    /// Nodes in sshare tree order; `nodes[0]` is root.
    pub nodes: Vec<TreeNode<'a>>,
    /// The frame usage is in.
    pub frame: DecayFrame,
    /// The time the tree is as of.
    pub as_of: Time,
}

/// The columns of the node at `index` in sshare order that need no
/// algorithm: RawShares (none on `root`, index 0) and RawUsage (its usage in
/// TRES-seconds, truncated); the table's rows and `audit`'s take them here.
pub fn raw_columns(index: usize, shares: Shares, usage_tres_secs: f64) -> (Option<Shares>, u64) {
    ((index != 0).then_some(shares), usage_tres_secs as u64)
}

impl EngineTree<'_> {
    /// Every node's usage in TRES-seconds as of the tree's time (RawUsage
    /// before truncation), by index.
    fn usage_tres_secs(&self) -> Vec<f64> {
        let tres_secs = self.frame.tres_secs_at(self.as_of);
        self.nodes
            .iter()
            .map(|node| tres_secs(node.usage))
            .collect()
    }
}

/// The fair-share table under `config`'s algorithm, with `factors` (the
/// dataflow's, by node index of `tree`; an account's is not read) as the
/// users' FairShare.
pub fn table(tree: &EngineTree, config: &Config, factors: &[f64]) -> FairshareTable {
    let view = View::new(tree, factors);
    let rows = match config.algorithm() {
        Algorithm::FairTree => fair_tree(&view),
        Algorithm::Classic => classic(&view, false, config.dampening_factor),
        Algorithm::DepthOblivious => classic(&view, true, config.dampening_factor),
        Algorithm::TicketBased => ticket(&view),
        Algorithm::LevelBased => level(&view, config.levels),
    };
    FairshareTable {
        algorithm: config.algorithm(),
        as_of: tree.as_of,
        rows,
    }
}

/// The tree with each node's usage in TRES-seconds.
struct View<'a> {
    tree: &'a EngineTree<'a>,
    usage_tres_secs: Vec<f64>,
    factors: &'a [f64],
}

impl<'a> View<'a> {
    /// The normalised shares row `index` (fs-parent `fs_parent`) shows: a
    /// `parent` association shows its fs-parent's (root's is 0).
    fn shown_norm_shares(&self, index: usize, fs_parent: usize) -> f64 {
        let shown = if self.is_parent_shares(index) {
            fs_parent
        } else {
            index
        };
        if shown == 0 {
            0.0
        } else {
            let shown = &self.tree.nodes[shown];
            share_fraction(shown.shares.raw(), shown.level_shares)
        }
    }

    fn new(tree: &'a EngineTree<'a>, factors: &'a [f64]) -> Self {
        View {
            tree,
            usage_tres_secs: tree.usage_tres_secs(),
            factors,
        }
    }

    fn len(&self) -> usize {
        self.tree.nodes.len()
    }

    fn is_parent_shares(&self, index: usize) -> bool {
        self.tree.nodes[index].shares.is_parent()
    }

    fn usage(&self, index: usize) -> FrameUsage {
        self.tree.nodes[index].usage
    }

    /// Per node, the summed usage of its fair-share children that are not
    /// `parent` associations (what `DEPTH_OBLIVIOUS` reads as a node's
    /// children's usage): one pass, exact in frame units.
    fn fs_children_usage(&self) -> Vec<FrameUsage> {
        let mut sums: Vec<FrameUsage> = vec![0; self.len()];
        for (index, node) in self.tree.nodes.iter().enumerate() {
            if let Some(parent) = node.fs_parent {
                if !self.is_parent_shares(index) {
                    sums[parent] += node.usage;
                }
            }
        }
        sums
    }

    /// Names, depth, RawShares (not on root), RawUsage (truncated).
    fn base_row(&self, index: usize) -> FairshareRow {
        let node = &self.tree.nodes[index];
        let mut row = FairshareRow::new(node.account, node.user, node.depth);
        row.usage_tres_secs = self.usage_tres_secs[index];
        (row.raw_shares, row.raw_usage) = raw_columns(index, node.shares, row.usage_tres_secs);
        row
    }

    fn norm_usage(&self, index: usize) -> f64 {
        norm_usage(self.usage(index), self.usage(0))
    }

    /// A user association's factor from the dataflow (0 if it has none yet).
    fn factor(&self, index: usize) -> Option<f64> {
        let node = &self.tree.nodes[index];
        node.is_user()
            .then(|| self.factors.get(index).copied().unwrap_or(0.0))
    }
}

fn fair_tree(view: &View) -> Vec<FairshareRow> {
    build_rows(view.len(), |index| {
        let node = &view.tree.nodes[index];
        let mut row = view.base_row(index);
        let Some(fs_parent) = node.fs_parent else {
            row.norm_shares = Some(0.0);
            row.effective_usage = Some(1.0);
            return row;
        };
        let effective_usage = usage_ratio(node.usage, view.usage(fs_parent));
        row.norm_shares = Some(view.shown_norm_shares(index, fs_parent));
        row.norm_usage = Some(view.norm_usage(index));
        row.effective_usage = Some(effective_usage);
        // sshare leaves every `parent` row's LevelFS empty (a `parent` user
        // still ranks with `+inf`).
        row.level_fs = (!node.shares.is_parent()).then(|| {
            level_fs_value(
                share_fraction(node.shares.raw(), node.level_shares),
                effective_usage,
            )
        });
        row.fairshare = view.factor(index);
        row
    })
}

fn classic(view: &View, depth_oblivious: bool, dampening_factor: u32) -> Vec<FairshareRow> {
    let count = view.len();
    let mut norm_shares = vec![1.0; count];
    let mut effective = vec![1.0; count];
    let norm_usages: Vec<f64> = (0..count).map(|i| view.norm_usage(i)).collect();
    let sibling_usages = if depth_oblivious {
        view.fs_children_usage()
    } else {
        Vec::new()
    };
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
            let sibling_usage = sibling_usages[parent];
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
    build_rows(count, |index| {
        let mut row = view.base_row(index);
        row.norm_shares = Some(norm_shares[index]);
        row.effective_usage = Some(effective[index]);
        if index != 0 {
            row.norm_usage = Some(norm_usages[index]);
        }
        // Users: the dataflow's factor; accounts and root: their own `F`
        // (a `parent` account its fs-parent's), as the oracle's.
        row.fairshare = view.factor(index).or_else(|| {
            let node = &view.tree.nodes[index];
            let source = match node.fs_parent {
                Some(parent) if node.shares.is_parent() => parent,
                _ => index,
            };
            Some(classic_factor(
                effective[source],
                norm_shares[source],
                dampening_factor,
            ))
        });
        row
    })
}

/// Classic normalized shares `S` of every node, top-down (root 1; a
/// `parent` node copies its fs-parent's).
fn norm_shares(view: &View) -> Vec<f64> {
    let mut norm_shares = vec![1.0; view.len()];
    for index in 1..view.len() {
        let node = &view.tree.nodes[index];
        let parent = node.fs_parent.unwrap_or(0);
        norm_shares[index] = if node.shares.is_parent() {
            norm_shares[parent]
        } else {
            classic_norm_shares(node.shares.raw(), node.level_shares, norm_shares[parent])
        };
    }
    norm_shares
}

/// Ticket-based rows: NormShares `S`, NormUsage `UN`, EffectvUsage `UE`,
/// FairShare `F` on every row but root, tickets (the dataflow's) on every
/// row.
fn ticket(view: &View) -> Vec<FairshareRow> {
    let count = view.len();
    let norm_shares = norm_shares(view);
    let norm_usages: Vec<f64> = (0..count).map(|i| view.norm_usage(i)).collect();
    let root_norm_usage = if view.len() > 0 && view.usage(0) > 0 {
        1.0
    } else {
        0.0
    };
    build_rows(count, |index| {
        let node = &view.tree.nodes[index];
        let mut row = view.base_row(index);
        row.norm_shares = Some(norm_shares[index]);
        row.tickets = Some(node.tickets);
        if index == 0 {
            row.effective_usage = Some(1.0);
            return row;
        }
        let (shares, usage) = if node.shares.is_parent() {
            match node.fs_parent {
                Some(0) | None => (1.0, root_norm_usage),
                Some(p) => (norm_shares[p], norm_usages[p]),
            }
        } else {
            (norm_shares[index], norm_usages[index])
        };
        let effective = ticket_effective_usage(usage, shares);
        row.effective_usage = Some(effective);
        row.norm_usage = Some(norm_usages[index]);
        row.fairshare = Some(ticket_factor(shares, effective));
        row
    })
}

/// Level-based rows: NormShares (the local share; a `parent` node shows its
/// fs-parent's, root 0), NormUsage, EffectvUsage `usage / fs-parent usage`,
/// level value and `fairshare_raw` on every row but root, FairShare (the
/// dataflow's) on users.
fn level(view: &View, levels: u32) -> Vec<FairshareRow> {
    let layout = LevelLayout::new(levels);
    let count = view.len();
    // Top-down (tree order: a node's ancestors come before it), each
    // non-root node's EffectvUsage and level value (`cells`) and its
    // `fairshare_raw` (`raw`: its parent's, with its own level value).
    let mut depths = vec![0usize; count];
    let mut raw = vec![0u64; count];
    let mut cells: Vec<Option<(f64, u64)>> = vec![None; count];
    for index in 0..count {
        let node = &view.tree.nodes[index];
        let Some(fs_parent) = node.fs_parent else {
            continue;
        };
        depths[index] = if fs_parent == 0 {
            0
        } else {
            depths[fs_parent] + 1
        };
        let effective_usage = usage_ratio(node.usage, view.usage(fs_parent));
        let bucket = match (node.shares.is_parent(), node.is_user()) {
            (true, true) => layout.bucket_max,
            (true, false) => 0,
            (false, _) => level_bucket_value(
                share_fraction(node.shares.raw(), node.level_shares),
                effective_usage,
                layout.bucket_max,
            ),
        };
        let level_value = layout.place(bucket, depths[index]);
        raw[index] = raw[node.parent.unwrap_or(0)] | level_value;
        cells[index] = Some((effective_usage, level_value));
    }
    build_rows(count, |index| {
        let node = &view.tree.nodes[index];
        let mut row = view.base_row(index);
        let (Some(fs_parent), Some((effective_usage, level_value))) =
            (node.fs_parent, cells[index])
        else {
            row.norm_shares = Some(0.0);
            row.effective_usage = Some(1.0);
            return row;
        };
        row.norm_shares = Some(view.shown_norm_shares(index, fs_parent));
        row.norm_usage = Some(view.norm_usage(index));
        row.effective_usage = Some(effective_usage);
        row.level_value = Some(level_value);
        row.fairshare_raw = Some(raw[index]);
        row.fairshare = view.factor(index);
        row
    })
}
