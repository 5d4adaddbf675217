//! [`State::apply`], the one place an event's effects are written, by
//! family: the association tree and its usage here, the jobs' lifecycle in
//! `job_events`, and the settings (`config`, QOS, partitions, the cluster)
//! here too. Every event has passed [`crate::Book::check`]; what it looked
//! up or parsed comes with it (`crate::check::Resolved`: a `config` event's
//! new configuration, a removed account's parent), and each effect is total:
//! what the check proved present is changed where it is found.

use std::collections::BTreeMap;

use fairflow_model::config::{ResetPeriod, UsageModel};
use fairflow_model::event::Op;
use fairflow_model::moab::Credential;
use fairflow_model::reset::next_reset_after;
use fairflow_model::usage::{DecayFrame, FrameUsage, OwnUsage};
use fairflow_model::{Config, Event, Shares, Time};

use super::{Account, Cluster, State, UserAssoc};
use crate::check::Resolved;
use crate::flux_bins::BinParams;

impl State {
    /// Apply an event [`crate::Book::check`] accepted (through
    /// [`crate::Book::apply`], which also keeps the book's indexes), with
    /// what the check `resolved`.
    pub(crate) fn apply(&mut self, event: &Event, resolved: Resolved) {
        let t = event.t;
        self.advance_to(t);
        match (&event.op, resolved) {
            (Op::Config { set }, Resolved::Config(next)) => self.apply_config(set, *next, t),
            (Op::RemoveAccount { name }, Resolved::RemoveAccount { parent }) => {
                self.remove_account(name, parent)
            }
            (
                op @ (Op::Account { .. }
                | Op::User { .. }
                | Op::RemoveUser { .. }
                | Op::Usage { .. }
                | Op::ResetUsage),
                _,
            ) => self.apply_tree_event(op, t),
            (
                op @ (Op::Submit { .. }
                | Op::Update { .. }
                | Op::Hold { .. }
                | Op::Release { .. }
                | Op::Cancel { .. }
                | Op::Start { .. }
                | Op::End { .. }
                | Op::Requeue { .. }),
                _,
            ) => self.apply_job_event(op, t),
            (op @ (Op::Qos { .. } | Op::Partition { .. } | Op::Cluster { .. }), _) => {
                self.apply_entity_event(op)
            }
            // A `config` or `remove_account` applies what its check resolved
            // (above); only a check makes a `Resolved`, so none comes without.
            (Op::Config { .. } | Op::RemoveAccount { .. } | Op::Tick, _) => {}
        }
        self.now = t;
    }

    /// The association tree's events: accounts and user associations
    /// created, changed and removed, usage charged, usage reset. (Other
    /// events are another family's: [`State::apply`] routes them.)
    fn apply_tree_event(&mut self, op: &Op, t: Time) {
        match op {
            Op::Account {
                name,
                parent,
                shares,
                priority,
            } => {
                if !self.accounts.contains_key(name) {
                    self.accounts_created += 1;
                }
                let created = self.accounts_created;
                let entry = self.accounts.get_or_insert_with(name.clone(), || Account {
                    parent: Some("root".to_string()),
                    shares: Shares::Value(1),
                    priority: None,
                    usage: OwnUsage::default(),
                    created,
                });
                if let Some(parent) = parent {
                    entry.parent = Some(parent.clone());
                }
                if let Some(shares) = shares {
                    entry.shares = *shares;
                }
                if priority.is_some() {
                    entry.priority = *priority;
                }
            }
            Op::User {
                user,
                account,
                shares,
                priority,
            } => {
                let entry = self
                    .users
                    .get_or_insert_with((account.clone(), user.clone()), || UserAssoc {
                        shares: Shares::Value(1),
                        priority: None,
                        usage: OwnUsage::default(),
                    });
                if let Some(shares) = shares {
                    entry.shares = *shares;
                }
                if priority.is_some() {
                    entry.priority = *priority;
                }
            }
            Op::RemoveUser { user, account } => self.remove_user(user, account),
            Op::Usage {
                account,
                user,
                amount,
                period,
            } => {
                let value = self.frame.point_usage(*amount, t);
                if self.flux_bins.is_some() {
                    self.charge_flux((account.clone(), user.clone()), value, t, *period);
                } else {
                    if let Some(usage) = self.own_usage_mut(account, user.as_deref()) {
                        usage.settled += value;
                    }
                }
                *self.credential_usage.get_or_insert_with(
                    (Credential::Group, account.clone()),
                    FrameUsage::default,
                ) += value;
            }
            Op::ResetUsage => self.reset_usage_at(t),
            _ => {}
        }
    }

    /// Remove an account (not root, without children): its usage history
    /// stays with the ancestors, `parent` absorbs it.
    fn remove_account(&mut self, name: &str, parent: String) {
        if let Some(removed) = self.accounts.remove(name) {
            if let Some(usage) = self.own_usage_mut(&parent, None) {
                usage.add(&removed.usage);
            }
        }
        if let Some(bins) = &mut self.flux_bins {
            bins.absorb(&(name.to_string(), None), &(parent, None));
        }
    }

    /// Remove a user association: its jobs go, its usage goes to its
    /// account.
    fn remove_user(&mut self, user: &str, account: &str) {
        let theirs: Vec<String> = self
            .jobs
            .values()
            .filter(|j| j.account == account && j.user == user)
            .map(|j| j.id.clone())
            .collect();
        for id in theirs {
            self.jobs.remove(&id);
        }
        let removed = self.users.remove(&(account.to_string(), user.to_string()));
        if let (Some(removed), Some(usage)) = (removed, self.own_usage_mut(account, None)) {
            usage.add(&removed.usage);
        }
        if let Some(bins) = &mut self.flux_bins {
            let key = (account.to_string(), Some(user.to_string()));
            bins.absorb(&key, &(account.to_string(), None));
        }
    }

    /// A `config` event (`set`): `next`, the configuration its check made,
    /// and what it moves (the usage model, the decay frame, the usage reset
    /// period).
    fn apply_config(&mut self, set: &BTreeMap<String, serde_json::Value>, next: Config, t: Time) {
        let old_half_life = self.config.frame_half_life_secs();
        let old_period = self.config.usage_reset_period;
        let old_calc_period = self.config.calc_period_secs;
        let old_model = self.config.usage_model;
        let old_bins = (BinParams::of(&self.config), self.config.flux_bins.clone());
        self.config = next;
        if self.config.usage_model != old_model {
            match self.config.usage_model {
                UsageModel::Flux => self.enter_flux_usage(t),
                UsageModel::Slurm => self.leave_flux_usage(t),
            }
        } else if self.config.usage_model == UsageModel::Flux {
            let period_end_given = set
                .keys()
                .any(|k| k.eq_ignore_ascii_case("FluxHalfLifePeriodEnd"));
            self.reconfigure_flux_bins(t, period_end_given, old_bins);
        } else if self.config.frame_half_life_secs() != old_half_life {
            // With continuous accrual, what running jobs accrued so far
            // decayed at the old half-life: settle it in the old frame
            // first, or the re-base would re-integrate it at the new one.
            // (With a calc period, the accrual since the last boundary is
            // charged at the new half-life, as Slurm's next cycle does.)
            if old_calc_period <= 0 {
                self.settle_accrual_to(t);
            }
            self.rebase(DecayFrame::new(self.config.frame_half_life_secs(), t), t);
        }
        let period_given = set
            .keys()
            .any(|k| k.eq_ignore_ascii_case("PriorityUsageResetPeriod"));
        if period_given || self.config.usage_reset_period != old_period {
            if self.config.usage_reset_period == ResetPeriod::Now {
                self.reset_usage_at(t);
            }
            self.next_reset = next_reset_after(self.config.usage_reset_period, t);
        }
    }

    /// QOS, partition and cluster events. (Other events are another
    /// family's: [`State::apply`] routes them.)
    fn apply_entity_event(&mut self, op: &Op) {
        match op {
            Op::Qos {
                name,
                priority,
                usage_factor,
            } => {
                let entry = self.qos.entry(name.clone()).or_default();
                if let Some(p) = priority {
                    entry.priority = *p;
                }
                if let Some(f) = usage_factor {
                    entry.usage_factor = *f;
                }
            }
            Op::Partition {
                name,
                priority_job_factor,
                tres_billing_weights,
                priority,
                tres,
                max_time_secs,
                priority_tier,
            } => {
                self.pair_floor.clear();
                let entry = self.partitions.entry(name.clone()).or_default();
                if let Some(p) = priority_job_factor {
                    entry.priority_job_factor = *p;
                }
                if let Some(w) = tres_billing_weights {
                    entry.billing_weights = w.clone();
                }
                if let Some(p) = priority {
                    entry.priority = *p;
                }
                if tres.is_some() {
                    entry.tres = tres.clone();
                }
                if max_time_secs.is_some() {
                    entry.max_time_secs = *max_time_secs;
                }
                if let Some(tier) = priority_tier {
                    let changed = std::mem::replace(&mut entry.priority_tier, *tier) != *tier;
                    if changed {
                        let listing: Vec<String> = self
                            .jobs_listing_partition(name)
                            .map(str::to_string)
                            .collect();
                        for job in listing {
                            self.order_partitions(&job);
                        }
                    }
                }
            }
            Op::Cluster { nodes, tres } => {
                self.cluster = Cluster {
                    nodes: *nodes,
                    tres: tres.clone(),
                };
            }
            _ => {}
        }
    }
}
