//! The driver's tree feed: what the dataflow's tree inputs were last sent,
//! and the interning of associations as [`NodeId`]s. Everything else (the
//! tree, shares, usage in exact frame units, jobs) is the book's
//! (`fairflow_book::Book`); after a batch, [`TreeFeed::deltas`] reads the
//! associations the book says changed and sends the differences from what it
//! sent before.
//!
//! Accounts are interned in the book's creation order (`Account::created`),
//! so a larger [`NodeId`] is a newer account (Slurm's Fair Tree walks tied
//! accounts newest first); an account removed and created again gets a new
//! id, and a restore interns everything afresh in that order.
//!
//! An association's *visible* own usage is the book's
//! (`State::visible_usage`): with `PriorityCalcPeriod = 0`, settled usage
//! plus what its running jobs accrued so far; with a period, the usage
//! settled at the last period boundary.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use fairflow_book::{AssocKey, Book, Changes};
use fairflow_model::usage::FrameUsage;
use fairflow_model::Shares;

use crate::factors::FsParams;
use crate::names::Names;
use crate::types::{AssocId, Diff, NodeId, SignedFrameUsage, ROOT};

/// What was last sent to the dataflow for one association.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sent {
    alive: bool,
    parent: Option<NodeId>,
    shares: Option<Shares>,
    usage: FrameUsage,
}

/// A user association's id and its interned name.
pub type UserName = (NodeId, AssocId);

/// Input deltas for one batch, each with its DD diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deltas {
    /// `(child, parent)` edges.
    pub edges: Vec<((NodeId, NodeId), Diff)>,
    /// `(node, shares)`; every live association has exactly one.
    pub shares: Vec<((NodeId, Shares), Diff)>,
    /// Own-usage changes in frame units, in the diff.
    pub usage: Vec<(NodeId, SignedFrameUsage)>,
    /// User associations (as opposed to accounts) appearing and disappearing.
    pub users: Vec<(NodeId, Diff)>,
    /// The same, with their interned `(account, user)` names.
    pub user_names: Vec<(UserName, Diff)>,
    /// The fair-share parameters (on a configuration change).
    pub fs_params: Vec<(FsParams, Diff)>,
    /// Ticket-based: the pending jobs' user associations (interned names),
    /// one per job in the diff; the driver fills it from the job feed.
    pub pending_jobs: Vec<(AssocId, Diff)>,
}

impl Deltas {
    /// Number of input records.
    pub fn len(&self) -> usize {
        self.edges.len()
            + self.shares.len()
            + self.usage.len()
            + self.users.len()
            + self.user_names.len()
            + self.fs_params.len()
            + self.pending_jobs.len()
    }

    /// Nothing to send?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append `other`'s records after this one's.
    pub fn extend(&mut self, other: Deltas) {
        self.edges.extend(other.edges);
        self.shares.extend(other.shares);
        self.usage.extend(other.usage);
        self.users.extend(other.users);
        self.user_names.extend(other.user_names);
        self.fs_params.extend(other.fs_params);
        self.pending_jobs.extend(other.pending_jobs);
    }
}

/// The feed; see the module documentation.
#[derive(Debug, Clone)]
pub struct TreeFeed {
    /// Every interned association's current id (a hash map: a batch of
    /// usage events looks up a thousand names).
    ids: HashMap<AssocKey, NodeId>,
    /// The interned user associations in name order.
    users: BTreeMap<(String, String), NodeId>,
    /// Each id's association.
    names: Vec<AssocKey>,
    /// Each user association id's interned name (accounts: unused).
    assoc_ids: Vec<AssocId>,
    /// Each account id's creation number in the book (0 for users and root).
    created: Vec<u64>,
    /// What each id was last sent as.
    sent: Vec<Sent>,
    sent_fs_params: Option<FsParams>,
    /// Bumped whenever an association is sent alive or dead or under
    /// another parent: the tree's shape (what the sshare order depends on)
    /// is the same while it is.
    shape_version: u64,
}

impl Default for TreeFeed {
    fn default() -> Self {
        TreeFeed::new()
    }
}

/// Usage as a diff; absurd amounts (beyond 2^127 frame units) saturate
/// rather than panic.
fn as_diff(usage: FrameUsage) -> SignedFrameUsage {
    SignedFrameUsage::try_from(usage).unwrap_or(SignedFrameUsage::MAX)
}

impl TreeFeed {
    /// A feed that has sent nothing, with only `root` interned (as [`ROOT`]).
    pub fn new() -> Self {
        let mut feed = TreeFeed {
            ids: HashMap::default(),
            users: BTreeMap::new(),
            names: Vec::new(),
            assoc_ids: Vec::new(),
            created: Vec::new(),
            sent: Vec::new(),
            sent_fs_params: None,
            shape_version: 0,
        };
        let root = feed.intern(&AssocKey::account("root"), 0, &mut Names::default());
        debug_assert_eq!(root, ROOT);
        feed
    }

    /// The id of an association, interning it if it has none yet (or, for an
    /// account, if the id it has was interned for an earlier account of the
    /// same name: `created` tells them apart).
    fn intern(&mut self, key: &AssocKey, created: u64, interner: &mut Names) -> NodeId {
        if let Some(id) = self.id_of(key) {
            if key.user.is_some() || self.created[id as usize] == created {
                return id;
            }
        }
        let id = NodeId::try_from(self.names.len()).expect("fewer than 2^32 associations");
        self.created.push(created);
        let assoc_id = match &key.user {
            None => AssocId::MAX,
            Some(user) => {
                let name = (key.account.clone(), user.clone());
                self.users.insert(name.clone(), id);
                interner.assocs.intern(&name)
            }
        };
        self.assoc_ids.push(assoc_id);
        self.ids.insert(key.clone(), id);
        self.names.push(key.clone());
        self.sent.push(Sent::default());
        id
    }

    /// The id of an association, if it was ever interned.
    pub fn id_of(&self, key: &AssocKey) -> Option<NodeId> {
        self.ids.get(key).copied()
    }

    /// Each id's association (removed ones keep their id).
    pub fn names(&self) -> &[AssocKey] {
        &self.names
    }

    /// The interned user associations by `(account, user)`.
    pub fn users(&self) -> &BTreeMap<(String, String), NodeId> {
        &self.users
    }

    /// The deltas that bring the dataflow from what was last sent to the
    /// book, for the associations `changes` names.
    pub fn deltas(&mut self, book: &Book, changes: &Changes, interner: &mut Names) -> Deltas {
        let state = book.state();
        // The changed keys are read in place (a batch of usage events names
        // a thousand associations: no copy of their names).
        let keys: Cow<'_, BTreeSet<AssocKey>> = if changes.all_assocs {
            let mut all: BTreeSet<AssocKey> = self.names.iter().cloned().collect();
            all.extend(state.accounts.keys().map(|a| AssocKey::account(a)));
            all.extend(state.users.keys().map(|(a, u)| AssocKey::user(a, u)));
            Cow::Owned(all)
        } else {
            Cow::Borrowed(&changes.assocs)
        };
        let mut deltas = Deltas::default();
        // New (or re-created) accounts are interned first, oldest first, so
        // that ids follow creation; an id left behind by a re-creation is
        // retracted.
        let mut new_accounts: Vec<(u64, &str)> = keys
            .iter()
            .filter(|key| key.user.is_none())
            .filter_map(|key| {
                let account = state.accounts.get(&key.account)?;
                let known = self
                    .id_of(key)
                    .is_some_and(|id| self.created[id as usize] == account.created);
                (!known).then_some((account.created, key.account.as_str()))
            })
            .collect();
        new_accounts.sort_unstable();
        for (created, name) in new_accounts {
            let key = AssocKey::account(name);
            if let Some(old) = self.id_of(&key) {
                self.send(old, Sent::default(), &mut deltas);
            }
            self.intern(&key, created, interner);
        }
        for key in keys.iter() {
            // What the association is now, if it exists.
            let current = match &key.user {
                None => state.accounts.get(&key.account).map(|account| {
                    let parent = account.parent.as_deref().map(AssocKey::account);
                    (parent, account.shares, state.visible_usage(&account.usage))
                }),
                Some(user) => state
                    .users
                    .get(&(key.account.clone(), user.clone()))
                    .map(|assoc| {
                        let parent = Some(AssocKey::account(&key.account));
                        (parent, assoc.shares, state.visible_usage(&assoc.usage))
                    }),
            };
            let (id, now) = match current {
                Some((parent, shares, usage)) => {
                    let id = match &key.user {
                        None => self.id_of(key).expect("accounts are interned above"),
                        Some(_) => self.intern(key, 0, interner),
                    };
                    // Accounts (and so every parent) were interned above or before.
                    let parent = parent.map(|p| self.id_of(&p).expect("parents are interned"));
                    let now = Sent {
                        alive: true,
                        parent,
                        shares: Some(shares),
                        usage,
                    };
                    (id, now)
                }
                None => match self.id_of(key) {
                    Some(id) => (id, Sent::default()),
                    None => continue,
                },
            };
            self.send(id, now, &mut deltas);
        }
        let fs_params = FsParams::from_config(&state.config);
        if self.sent_fs_params != Some(fs_params) {
            if let Some(old) = self.sent_fs_params.replace(fs_params) {
                deltas.fs_params.push((old, -1));
            }
            deltas.fs_params.push((fs_params, 1));
        }
        deltas
    }

    /// Record that `id` is now `now`, pushing the differences from what it
    /// was sent as.
    fn send(&mut self, id: NodeId, now: Sent, deltas: &mut Deltas) {
        let before = self.sent[id as usize];
        if before.alive != now.alive || before.parent != now.parent {
            self.shape_version += 1;
        }
        self.push_difference(id, before, now, deltas);
        self.sent[id as usize] = now;
    }

    /// The tree's shape version: equal between two reads when no
    /// association was sent alive, dead or moved in between.
    pub fn shape_version(&self) -> u64 {
        self.shape_version
    }

    /// Push the records that take `id` from `before` to `now`.
    fn push_difference(&self, id: NodeId, before: Sent, now: Sent, deltas: &mut Deltas) {
        if before.alive != now.alive && self.names[id as usize].user.is_some() {
            let diff = if now.alive { 1 } else { -1 };
            deltas.users.push((id, diff));
            deltas
                .user_names
                .push(((id, self.assoc_ids[id as usize]), diff));
        }
        if before.parent != now.parent {
            if let Some(p) = before.parent {
                deltas.edges.push(((id, p), -1));
            }
            if let Some(p) = now.parent {
                deltas.edges.push(((id, p), 1));
            }
        }
        if before.shares != now.shares {
            if let Some(s) = before.shares {
                deltas.shares.push(((id, s), -1));
            }
            if let Some(s) = now.shares {
                deltas.shares.push(((id, s), 1));
            }
        }
        if before.usage != now.usage {
            let change = as_diff(now.usage).saturating_sub(as_diff(before.usage));
            deltas.usage.push((id, change));
        }
    }

    /// Everything sent so far as records: insertions (`present`), or their
    /// retractions. The tree moves between dataflows this way when the
    /// configuration switches the family of algorithms (`factors::Family`):
    /// the old family's dataflow is emptied, the new one's filled.
    pub fn sent_records(&self, present: bool) -> Deltas {
        let mut deltas = Deltas::default();
        for (id, &sent) in self.sent.iter().enumerate() {
            let id = NodeId::try_from(id).expect("interned");
            if present {
                self.push_difference(id, Sent::default(), sent, &mut deltas);
            } else {
                self.push_difference(id, sent, Sent::default(), &mut deltas);
            }
        }
        if let Some(params) = self.sent_fs_params {
            deltas
                .fs_params
                .push((params, if present { 1 } else { -1 }));
        }
        deltas
    }

    /// Replace everything sent by the contents of `book` (a restore):
    /// returns the retraction of every sent record and the records of the
    /// book, to send as one batch (records that did not change cancel in
    /// the dataflow when both go to the same one).
    pub fn replace_with(&mut self, book: &Book, interner: &mut Names) -> (Deltas, Deltas) {
        let retracted = self.sent_records(false);
        // A fresh interning, in the new book's creation order; the shape
        // version goes on from the old one's (never repeats).
        let shape_version = self.shape_version + 1;
        *self = TreeFeed::new();
        self.shape_version = shape_version;
        let inserted = self.deltas(book, &Changes::everything(), interner);
        (retracted, inserted)
    }

    /// The shares each association was last sent with.
    pub fn sent_shares(&self, id: NodeId) -> Option<Shares> {
        self.sent[id as usize].shares
    }

    /// The parent each association was last sent with.
    pub fn sent_parent(&self, id: NodeId) -> Option<NodeId> {
        self.sent[id as usize].parent
    }

    /// A user association's interned name (`None` for an account).
    pub fn assoc_id(&self, id: NodeId) -> Option<AssocId> {
        let assoc = *self.assoc_ids.get(id as usize)?;
        (assoc != AssocId::MAX).then_some(assoc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::event::Op;
    use fairflow_model::{Config, Event};

    #[test]
    fn a_usage_event_becomes_one_usage_delta() {
        let mut book = Book::new(Config {
            decay_half_life_secs: 0,
            ..Config::default()
        });
        book.track_changes(true);
        let mut feed = TreeFeed::new();
        let mut names = Names::default();
        let first = feed.deltas(&book, &book.clone().take_changes(), &mut names);
        assert_eq!(first.shares, vec![((ROOT, Shares::Value(1)), 1)]);
        book.take_changes();
        let event = |op| Event { t: 10, op };
        book.apply(
            1,
            &event(Op::Account {
                name: "a".into(),
                parent: None,
                shares: Some(Shares::Value(5)),
                priority: None,
            }),
        )
        .unwrap();
        book.apply(
            2,
            &event(Op::Usage {
                account: "a".into(),
                user: None,
                amount: 3.0,
                period: None,
            }),
        )
        .unwrap();
        let deltas = feed.deltas(&book, &book.clone().take_changes(), &mut names);
        assert_eq!(deltas.edges, vec![((1, ROOT), 1)]);
        assert_eq!(deltas.shares, vec![((1, Shares::Value(5)), 1)]);
        // No decay: 3 TRES-seconds are 3 · 2^20 · 5^6 = 49_152_000_000 frame units.
        assert_eq!(deltas.usage, vec![(1, 49_152_000_000)]);
        book.take_changes();
        assert!(feed
            .deltas(&book, &book.clone().take_changes(), &mut names)
            .is_empty());
    }
}
