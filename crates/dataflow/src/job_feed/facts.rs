//! The priority facts the feed sends, grouped by [`Subject`] (the
//! configuration, the cluster, one account, one user association, one QOS,
//! one partition, Moab's usage facts), derived from the book per subject;
//! and the effective association priority (the nearest priority up the
//! account chain), memoised up the chains for one pass over the subjects.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_book::State;
use fairflow_model::PriorityModel;

use crate::names::Names;
use crate::priority::{tres_bits, AssocRef, Fact, PartitionRec, PriorityParams};

/// What a group of priority facts is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// The priority configuration.
    Config,
    /// The cluster's size.
    Cluster,
    /// One account: its effective association priority and own priority.
    Account(String),
    /// One user association: its effective association priority.
    User(String, String),
    /// One QOS.
    Qos(String),
    /// One partition.
    Partition(String),
    /// Moab's credential usage and wallclock accuracy.
    Moab,
}

/// An association's effective Slurm association priority: its own, else the
/// nearest account's up the chain, else 0.
fn effective_assoc_priority(
    state: &State,
    account: &str,
    user: Option<&str>,
    accounts: &mut AccountPriorities,
) -> i64 {
    let own = user.and_then(|user| {
        state
            .users
            .get(&(account.to_string(), user.to_string()))
            .and_then(|u| u.priority)
    });
    own.unwrap_or_else(|| accounts.of(state, account))
}

/// The accounts' effective priorities (own, else the nearest ancestor's,
/// else 0), memoised up the chains for one pass over the subjects: every
/// account is walked once, not once per account below it (a chain of depth
/// `d` costs `O(d)` lookups, not `d²/2`).
#[derive(Debug, Default)]
pub(super) struct AccountPriorities(BTreeMap<String, i64>);

impl AccountPriorities {
    pub(super) fn of(&mut self, state: &State, account: &str) -> i64 {
        let mut chain: Vec<&str> = Vec::new();
        let mut current = Some(account);
        let found = loop {
            let Some(name) = current else { break 0 };
            if let Some(&known) = self.0.get(name) {
                break known;
            }
            let Some(record) = state.accounts.get(name) else {
                break 0;
            };
            chain.push(name);
            if let Some(priority) = record.priority {
                break priority;
            }
            current = record.parent.as_deref();
        };
        for name in chain {
            self.0.insert(name.to_string(), found);
        }
        found
    }
}

/// Every subject `state` has facts about.
pub(super) fn all_subjects(state: &State) -> Vec<Subject> {
    let mut subjects = vec![Subject::Config, Subject::Cluster, Subject::Moab];
    subjects.extend(state.accounts.keys().cloned().map(Subject::Account));
    subjects.extend(
        state
            .users
            .keys()
            .map(|(account, user)| Subject::User(account.clone(), user.clone())),
    );
    subjects.extend(state.qos.keys().cloned().map(Subject::Qos));
    subjects.extend(state.partitions.keys().cloned().map(Subject::Partition));
    subjects
}

/// The accounts and user associations at or below any of `roots` (one pass
/// over the associations, memoised up the account chains).
pub(super) fn subtree_subjects(state: &State, roots: &BTreeSet<String>) -> Vec<Subject> {
    let mut below: BTreeMap<&str, bool> = roots.iter().map(|r| (r.as_str(), true)).collect();
    for name in state.accounts.keys() {
        let mut chain = Vec::new();
        let mut current = Some(name.as_str());
        let found = loop {
            let Some(account) = current else { break false };
            if let Some(&known) = below.get(account) {
                break known;
            }
            chain.push(account);
            current = state
                .accounts
                .get(account)
                .and_then(|a| a.parent.as_deref());
        };
        for account in chain {
            below.insert(account, found);
        }
    }
    let mut subjects: Vec<Subject> = below
        .iter()
        .filter(|(_, &inside)| inside)
        .map(|(name, _)| Subject::Account(name.to_string()))
        .collect();
    subjects.extend(
        state
            .users
            .keys()
            .filter(|(account, _)| below.get(account.as_str()).copied().unwrap_or(false))
            .map(|(account, user)| Subject::User(account.clone(), user.clone())),
    );
    subjects
}

/// The facts about one subject.
pub(super) fn subject_facts(
    state: &State,
    subject: &Subject,
    names: &mut Names,
    account_priorities: &mut AccountPriorities,
) -> BTreeSet<Fact> {
    let mut facts = BTreeSet::new();
    match subject {
        Subject::Config => {
            facts.insert(Fact::Config(Box::new(PriorityParams::from_config(
                &state.config,
            ))));
        }
        Subject::Cluster => {
            facts.insert(Fact::Cluster {
                nodes: state.cluster.nodes,
                tres: tres_bits(&state.cluster.tres),
            });
        }
        Subject::Account(name) => {
            if let Some(account) = state.accounts.get(name) {
                let id = names.accounts.intern_str(name);
                facts.insert(Fact::AssocPriority {
                    of: AssocRef::Account(id),
                    priority: effective_assoc_priority(state, name, None, account_priorities),
                });
                if let Some(priority) = account.priority {
                    facts.insert(Fact::AccountPriority {
                        account: id,
                        priority,
                    });
                }
            }
        }
        Subject::User(account, user) => {
            let key = (account.clone(), user.clone());
            if state.users.contains_key(&key) {
                facts.insert(Fact::AssocPriority {
                    of: AssocRef::User(names.assocs.intern(&key)),
                    priority: effective_assoc_priority(
                        state,
                        account,
                        Some(user),
                        account_priorities,
                    ),
                });
            }
        }
        Subject::Qos(name) => {
            if let Some(qos) = state.qos.get(name) {
                facts.insert(Fact::Qos {
                    name: names.labels.intern_str(name),
                    priority: qos.priority,
                });
            }
        }
        Subject::Partition(name) => {
            if let Some(p) = state.partitions.get(name) {
                facts.insert(Fact::Partition {
                    name: names.labels.intern_str(name),
                    rec: PartitionRec {
                        job_factor: p.priority_job_factor,
                        priority: p.priority,
                        max_time_secs: p.max_time_secs,
                        tres: p.tres.as_ref().map(tres_bits),
                    },
                });
            }
        }
        Subject::Moab => {
            if state.config.model == PriorityModel::Moab {
                let usage = state.moab_credential_usage();
                facts.insert(Fact::MoabUsageTotal(usage.total));
                for ((kind, name), usage) in usage.by_credential {
                    facts.insert(Fact::MoabUsage { kind, name, usage });
                }
                for (user, (used, requested)) in &state.wallclock_accuracy {
                    facts.insert(Fact::WallclockAccuracy {
                        user: user.clone(),
                        used_bits: used.to_bits(),
                        requested_bits: requested.to_bits(),
                    });
                }
            }
        }
    }
    facts
}

/// Every priority fact of `state`, with `factors` as the user associations'
/// fair-share factors by `(account, user)` (tests drive the priority
/// dataflow with these, apart from the engine).
#[cfg(test)]
pub fn facts_of(
    state: &State,
    factors: &BTreeMap<(String, String), f64>,
    names: &mut Names,
) -> BTreeSet<Fact> {
    let mut account_priorities = AccountPriorities::default();
    let mut facts: BTreeSet<Fact> = all_subjects(state)
        .iter()
        .flat_map(|subject| subject_facts(state, subject, names, &mut account_priorities))
        .collect();
    for (assoc, factor) in factors {
        facts.insert(Fact::Fairshare {
            assoc: names.assocs.intern(assoc),
            factor_bits: factor.to_bits(),
        });
    }
    facts
}
