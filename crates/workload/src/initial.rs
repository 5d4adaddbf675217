//! The generator's initial state, in order: the configuration, the cluster,
//! partitions and QOS, the account tree (preferential attachment), the user
//! associations (heavy-tailed account sizes), a usage history, then running
//! and pending jobs.

use std::collections::{BTreeMap, HashSet};

use fairflow_model::event::Op;
use fairflow_model::tres::{parse_weight_list, TresCounts};
use fairflow_model::Shares;
use rand::RngExt;
use serde_json::Value;

use super::{Chunks, Generator, WorkloadParams, PARTITIONS, QOS};

impl Generator {
    /// The initial state's events, in order, into `events`.
    pub(super) fn generate_initial(&mut self, events: &mut Chunks<'_>) {
        let p = self.params.clone();
        self.push_settings(&p, events);
        let n_accounts = (p.user_associations / p.users_per_account.max(1)).max(1);
        self.push_accounts(&p, n_accounts, events);
        self.push_users(&p, n_accounts, events);
        self.push_usage_history(&p, events);
        self.push_jobs(&p, events);
    }

    /// The configuration, the cluster, the partitions and the QOS.
    fn push_settings(&mut self, p: &WorkloadParams, events: &mut Chunks<'_>) {
        let set: BTreeMap<String, Value> = [
            ("PriorityWeightFairshare", Value::from(100_000)),
            ("PriorityWeightAge", Value::from(1_000)),
            ("PriorityWeightJobSize", Value::from(500)),
            ("PriorityWeightPartition", Value::from(1_000)),
            ("PriorityWeightQOS", Value::from(2_000)),
            ("PriorityMaxAge", Value::from("7-0")),
            ("PriorityDecayHalfLife", Value::from("7-0")),
            ("PriorityCalcPeriod", Value::from(5)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        events.push(self.event(Op::Config { set }));
        let cpus = (p.nodes * p.cpus_per_node) as f64;
        events.push(self.event(Op::Cluster {
            nodes: p.nodes,
            tres: TresCounts::from([
                ("cpu".to_string(), cpus),
                ("mem".to_string(), cpus * 4096.0),
                ("gres/gpu".to_string(), (p.nodes / 4) as f64 * 4.0),
            ]),
        }));
        for (name, factor, weights) in PARTITIONS {
            let priority_tier = p
                .tiered_partitions
                .then_some(if name == "debug" { 2 } else { 1 });
            events.push(self.event(Op::Partition {
                name: name.to_string(),
                priority_job_factor: Some(factor),
                tres_billing_weights: Some(
                    parse_weight_list(weights).expect("valid built-in weights"),
                ),
                priority: Some(i64::from(factor)),
                tres: None,
                max_time_secs: Some(2 * 86_400),
                priority_tier,
            }));
        }
        for (name, priority, usage_factor) in QOS {
            events.push(self.event(Op::Qos {
                name: name.to_string(),
                priority: Some(priority),
                usage_factor: Some(usage_factor),
            }));
        }
    }

    /// `n_accounts` accounts under `root`.
    fn push_accounts(&mut self, p: &WorkloadParams, n_accounts: usize, events: &mut Chunks<'_>) {
        // Accounts: preferential attachment under accounts shallower than the
        // deepest account level, so fan-out is skewed and depth varies.
        let max_account_depth = p.max_depth.saturating_sub(1).max(1);
        let mut attach_weight: Vec<(String, usize, f64)> = vec![("root".to_string(), 0, 1.0)];
        for i in 0..n_accounts {
            let total: f64 = attach_weight
                .iter()
                .filter(|(_, d, _)| *d < max_account_depth)
                .map(|(_, _, w)| w)
                .sum();
            let mut pick = self.rng.random::<f64>() * total;
            let mut parent = ("root".to_string(), 0);
            for (name, depth, w) in attach_weight
                .iter()
                .filter(|(_, d, _)| *d < max_account_depth)
            {
                if pick < *w {
                    parent = (name.clone(), *depth);
                    break;
                }
                pick -= w;
            }
            let name = format!("a{i}");
            let shares = (10f64.powf(self.rng.random::<f64>() * 3.0)).round() as u32;
            let priority = self.rng.random_range(0..10);
            events.push(self.event(Op::Account {
                name: name.clone(),
                parent: Some(parent.0.clone()),
                shares: Some(Shares::Value(shares)),
                priority: Some(priority),
            }));
            if let Some(entry) = attach_weight.iter_mut().find(|(n, _, _)| *n == parent.0) {
                entry.2 += 1.0;
            }
            attach_weight.push((name.clone(), parent.1 + 1, 1.0));
            self.accounts.insert(name.clone(), (parent.0, parent.1 + 1));
            self.account_names.push(name);
        }
    }

    /// The user associations, up to `p.user_associations`.
    fn push_users(&mut self, p: &WorkloadParams, n_accounts: usize, events: &mut Chunks<'_>) {
        // Users: heavy-tailed account sizes; about one in ten associations is a
        // user already seen in another account.
        let weights: Vec<f64> = (0..n_accounts).map(|_| self.pareto(1.2)).collect();
        let total: f64 = weights.iter().sum();
        let mut next_user = 0usize;
        let mut seen: HashSet<(String, String)> = self.associations.iter().cloned().collect();
        while self.associations.len() < p.user_associations {
            let mut pick = self.rng.random::<f64>() * total;
            let mut account_index = n_accounts - 1;
            for (i, w) in weights.iter().enumerate() {
                if pick < *w {
                    account_index = i;
                    break;
                }
                pick -= w;
            }
            let account = self.account_names[account_index].clone();
            let user = if next_user > 0 && self.rng.random_bool(0.1) {
                format!("u{}", self.rng.random_range(0..next_user))
            } else {
                next_user += 1;
                format!("u{}", next_user - 1)
            };
            if !seen.insert((account.clone(), user.clone())) {
                continue;
            }
            let shares = match self.rng.random_range(0..100) {
                0 => Shares::Parent,
                1 => Shares::Value(0),
                2..=80 => Shares::Value(1),
                _ => Shares::Value(self.rng.random_range(2..=10)),
            };
            events.push(self.event(Op::User {
                user: user.clone(),
                account: account.clone(),
                shares: Some(shares),
                priority: None,
            }));
            self.associations.push((account, user));
        }
    }

    /// Usage history: `2 ×` the associations' count of usage events.
    fn push_usage_history(&mut self, p: &WorkloadParams, events: &mut Chunks<'_>) {
        // Usage history: spread over the history window, heavy-tailed amounts.
        let history_events = p.user_associations * 2;
        let mut stamps: Vec<i64> = (0..history_events)
            .map(|_| self.rng.random_range(0..p.history_secs.max(1)))
            .collect();
        stamps.sort_unstable();
        for offset in stamps {
            self.now = p.start_at + offset;
            let (account, user) =
                self.associations[self.rng.random_range(0..self.associations.len())].clone();
            let amount = (self.pareto(1.1) * 3600.0).round();
            events.push(self.event(Op::Usage {
                account,
                user: Some(user),
                amount,
                period: None,
            }));
        }
    }

    /// The running jobs, then the pending jobs.
    fn push_jobs(&mut self, p: &WorkloadParams, events: &mut Chunks<'_>) {
        // Running jobs, then pending jobs submitted in bursts.
        for _ in 0..p.running_jobs {
            let submit = self.submit();
            let id = match &submit.op {
                Op::Submit { job, .. } => job.clone(),
                _ => unreachable!("submit builds a submit"),
            };
            events.push(submit);
            let last = self.pending.iter().rposition(|j| *j == id);
            events.push(self.start_at(last.expect("submit lists the job as pending")));
        }
        while self.pending.len() < p.pending_jobs {
            self.now += self.rng.random_range(0..3);
            let burst = (self.pareto(1.5) as usize)
                .min(p.pending_jobs - self.pending.len())
                .max(1);
            let association = self.rng.random_range(0..self.associations.len());
            for _ in 0..burst {
                events.push(self.submit_for(association));
            }
        }
    }
}
