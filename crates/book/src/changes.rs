//! What a batch of events changed, as the incremental engine's driver needs
//! to know it: the associations whose parent, shares, existence or visible
//! usage may have moved, the jobs created, changed or gone, and the entities
//! whose priority-relevant attributes changed. The book records it while it
//! applies events ([`crate::Book::track_changes`]); the driver compares what
//! it finds against what it sent, so recording too much is only slower, never
//! wrong, and recording too little is a bug.

use std::collections::BTreeSet;

use fairflow_model::event::Op;

use crate::State;

/// An association: an account (`user` `None`) or a user association.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AssocKey {
    /// The account (for a user association, the account it is in).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
}

impl AssocKey {
    /// An account.
    pub fn account(name: &str) -> Self {
        AssocKey {
            account: name.to_string(),
            user: None,
        }
    }

    /// A user association.
    pub fn user(account: &str, user: &str) -> Self {
        AssocKey {
            account: account.to_string(),
            user: Some(user.to_string()),
        }
    }
}

/// What changed; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Every association may have changed (a reset, a re-base, a
    /// configuration change, the first read after tracking started).
    pub all_assocs: bool,
    /// Associations whose parent, shares, existence or visible usage may
    /// have changed.
    pub assocs: BTreeSet<AssocKey>,
    /// Every job may have changed (the first read after tracking started).
    pub all_jobs: bool,
    /// Jobs created, changed or gone.
    pub jobs: BTreeSet<String>,
    /// The configuration changed.
    pub config: bool,
    /// The cluster's size changed.
    pub cluster: bool,
    /// An association was removed.
    pub removed: bool,
    /// Accounts created or changed.
    pub accounts: BTreeSet<String>,
    /// Accounts whose parent or own priority changed (their whole subtree's
    /// effective association priority may move).
    pub moved_accounts: BTreeSet<String>,
    /// User associations created or changed.
    pub users: BTreeSet<(String, String)>,
    /// QOS created or changed.
    pub qos: BTreeSet<String>,
    /// Partitions created or changed.
    pub partitions: BTreeSet<String>,
    /// Usage was charged or settled (Moab's credential usage moves).
    pub usage: bool,
}

impl Changes {
    /// Everything, as for a reader that has seen nothing yet.
    pub fn everything() -> Self {
        Changes {
            all_assocs: true,
            all_jobs: true,
            config: true,
            cluster: true,
            removed: true,
            usage: true,
            ..Changes::default()
        }
    }

    /// Has anything changed?
    pub fn is_empty(&self) -> bool {
        *self == Changes::default()
    }

    /// Record the effect of `op`, applied to `state`; the other arguments are
    /// what the book knew before applying it.
    pub(crate) fn note(
        &mut self,
        op: &Op,
        state: &State,
        account_before: Option<(Option<String>, Option<i64>)>,
        assoc_of_job: Option<(String, String)>,
        removed_jobs: Vec<String>,
        removed_parent: Option<String>,
    ) {
        match op {
            Op::Account { name, .. } => {
                self.assocs.insert(AssocKey::account(name));
                self.accounts.insert(name.clone());
                let after = state
                    .accounts
                    .get(name)
                    .map(|a| (a.parent.clone(), a.priority));
                if account_before.is_some() && account_before != after {
                    self.moved_accounts.insert(name.clone());
                }
            }
            Op::User { account, user, .. } => {
                self.assocs.insert(AssocKey::user(account, user));
                self.users.insert((account.clone(), user.clone()));
            }
            Op::RemoveAccount { name } => {
                self.assocs.insert(AssocKey::account(name));
                if let Some(parent) = removed_parent {
                    self.assocs.insert(AssocKey::account(&parent));
                }
                self.accounts.insert(name.clone());
                self.removed = true;
                self.usage = true;
            }
            Op::RemoveUser { user, account } => {
                self.assocs.insert(AssocKey::user(account, user));
                self.assocs.insert(AssocKey::account(account));
                self.users.insert((account.clone(), user.clone()));
                self.jobs.extend(removed_jobs);
                self.removed = true;
                self.usage = true;
            }
            Op::Usage { account, user, .. } => {
                self.assocs.insert(AssocKey {
                    account: account.clone(),
                    user: user.clone(),
                });
                self.usage = true;
            }
            Op::ResetUsage => {
                self.all_assocs = true;
                self.usage = true;
            }
            Op::Config { .. } => {
                self.all_assocs = true;
                self.config = true;
                self.usage = true;
            }
            Op::Submit { job, .. }
            | Op::Update { job, .. }
            | Op::Hold { job }
            | Op::Release { job }
            | Op::Cancel { job } => {
                self.jobs.insert(job.clone());
            }
            Op::Start { job, .. } | Op::End { job } | Op::Requeue { job, .. } => {
                self.jobs.insert(job.clone());
                if let Some((account, user)) = assoc_of_job {
                    self.assocs.insert(AssocKey::user(&account, &user));
                }
                self.usage = true;
            }
            Op::Qos { name, .. } => {
                self.qos.insert(name.clone());
            }
            Op::Partition {
                name,
                priority_tier,
                ..
            } => {
                self.partitions.insert(name.clone());
                if priority_tier.is_some() {
                    // A tier may reorder the lists of the jobs that name it.
                    self.jobs
                        .extend(state.jobs_listing_partition(name).map(str::to_string));
                }
            }
            Op::Cluster { .. } => self.cluster = true,
            Op::Tick => {}
        }
    }
}
