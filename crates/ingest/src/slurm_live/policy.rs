//! The cluster's policy as one poll reads it: associations and shares
//! (`sacctmgr`), QOS, the priority configuration (`scontrol show config`),
//! the cluster's size (`scontrol show node`), through `fairflow import
//! slurm`'s own readers, and the partitions (`scontrol show partition -o`).
//! Each piece is one keyed event ([`Policy`]); [`Policy::changes`] gives
//! the events that take fairflow from one poll's policy to the next.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::event::Op;
use fairflow_model::tres::parse_weight_list;
use fairflow_model::{Event, Time};

use super::command::CommandError;
use crate::import_slurm::nodes::pairs;
use crate::import_slurm::{import_slurm, time_limit_secs, ImportError, SlurmImport, Source};
use crate::write::event_to_line;

/// The policy: `(key, event line)` pairs, parents before children
/// (`account:NAME`, `user:ACCOUNT:USER`, `qos:NAME`, `partition:NAME`,
/// `config:KEY`, `cluster`), each line the event at time 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    /// The keyed events, in the order they apply.
    pub entries: Vec<(String, String)>,
}

/// The outputs one policy is read from, each with the command that printed it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyOutputs<'a> {
    /// `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`.
    pub assoc: Source<'a>,
    /// `sacctmgr -P show qos format=Name,Priority,UsageFactor`.
    pub qos: Source<'a>,
    /// `scontrol show config`.
    pub config: Source<'a>,
    /// `scontrol show node`.
    pub nodes: Source<'a>,
    /// `scontrol show partition -o`.
    pub partitions: Source<'a>,
}

/// An import error as the command's: its line, field and reason.
pub fn command_error(error: ImportError) -> CommandError {
    let field = error
        .field
        .map(|f| format!("field `{f}`: "))
        .unwrap_or_default();
    CommandError::new(
        &error.file,
        Some(error.line),
        format!("{field}{}", error.reason),
    )
}

fn key_of(op: &Op) -> Option<String> {
    Some(match op {
        Op::Account { name, .. } => format!("account:{name}"),
        Op::User { user, account, .. } => format!("user:{account}:{user}"),
        Op::Qos { name, .. } => format!("qos:{name}"),
        Op::Partition { name, .. } => format!("partition:{name}"),
        Op::Cluster { .. } => "cluster".to_string(),
        _ => return None,
    })
}

/// A policy entry that is not a valid event: its key and the rejection
/// (the policy's lines are written by the importer, so this is a bug).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {rejection}")]
pub struct PolicyEventError {
    /// The entry's key.
    pub key: String,
    /// Why its line is not an event.
    pub rejection: crate::Rejection,
}

impl Policy {
    /// Read the outputs of one poll; `cluster` picks the cluster's
    /// associations when sacctmgr lists several.
    pub fn read(outputs: &PolicyOutputs<'_>, cluster: Option<&str>) -> Result<Self, CommandError> {
        let events = import_slurm(&SlurmImport {
            assoc: outputs.assoc,
            sshare: None,
            slurm_conf: Some(outputs.config),
            squeue: None,
            qos: Some(outputs.qos),
            nodes: Some(outputs.nodes),
            sacct: None,
            cluster,
            t: 0,
        })
        .map_err(command_error)?;
        let mut entries = Vec::new();
        for op in read_partitions(outputs.partitions)? {
            entries.push((key_of(&op).unwrap_or_default(), op));
        }
        for event in events {
            match event.op {
                Op::Config { set } => {
                    for (key, value) in set {
                        let one = Op::Config {
                            set: BTreeMap::from([(key.clone(), value)]),
                        };
                        entries.push((format!("config:{key}"), one));
                    }
                }
                op => {
                    if let Some(key) = key_of(&op) {
                        entries.push((key, op));
                    }
                }
            }
        }
        Ok(Policy {
            entries: entries
                .into_iter()
                .map(|(key, op)| (key, event_to_line(&Event { t: 0, op })))
                .collect(),
        })
    }

    /// The events (at `t`) that take fairflow from `self` (what was applied)
    /// to `next`: the new and changed entries in `next`'s order (the changed
    /// `config` keys in one event), and apart the removed user associations
    /// and accounts, children first. QOS, partitions and configuration keys
    /// that disappear are left as they are (no event removes them).
    pub fn changes(
        &self,
        next: &Policy,
        t: Time,
    ) -> Result<(Vec<Event>, Vec<Event>), PolicyEventError> {
        let before: BTreeMap<&str, &str> = self
            .entries
            .iter()
            .map(|(k, l)| (k.as_str(), l.as_str()))
            .collect();
        let now: BTreeSet<&str> = next.entries.iter().map(|(k, _)| k.as_str()).collect();
        let mut events = Vec::new();
        let mut config: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        for (key, line) in &next.entries {
            if before.get(key.as_str()) == Some(&line.as_str()) {
                continue;
            }
            let event = crate::parse_event(1, line).map_err(|rejection| PolicyEventError {
                key: key.clone(),
                rejection,
            })?;
            match event.op {
                Op::Config { set } => config.extend(set),
                op => events.push(Event { t, op }),
            }
        }
        if !config.is_empty() {
            events.push(Event {
                t,
                op: Op::Config { set: config },
            });
        }
        let removed = self
            .entries
            .iter()
            .rev()
            .filter(|(key, _)| !now.contains(key.as_str()));
        let (mut users, mut accounts) = (Vec::new(), Vec::new());
        for (key, _) in removed {
            if let Some(rest) = key.strip_prefix("user:") {
                if let Some((account, user)) = rest.split_once(':') {
                    users.push(Op::RemoveUser {
                        user: user.to_string(),
                        account: account.to_string(),
                    });
                }
            } else if let Some(name) = key.strip_prefix("account:") {
                accounts.push(Op::RemoveAccount {
                    name: name.to_string(),
                });
            }
        }
        let removals = users.into_iter().chain(accounts).map(|op| Event { t, op });
        Ok((events, removals.collect()))
    }

    /// A digest of the policy (its keys and event lines, in order), kept in
    /// the log by the follower: FNV-1a, 64 bits, a fixed function of the
    /// bytes, so a digest logged by one build is checked by the next.
    pub fn digest(&self) -> u64 {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        for (key, line) in &self.entries {
            for byte in key.bytes().chain([0xff]).chain(line.bytes()).chain([0xfe]) {
                digest = (digest ^ u64::from(byte)).wrapping_mul(PRIME);
            }
        }
        digest
    }

    /// The parent of each account, for own-usage arithmetic.
    pub fn account_parents(&self) -> BTreeMap<String, String> {
        let mut parents = BTreeMap::new();
        for (key, line) in &self.entries {
            if !key.starts_with("account:") {
                continue;
            }
            if let Ok(Event {
                op:
                    Op::Account {
                        name,
                        parent: Some(parent),
                        ..
                    },
                ..
            }) = crate::parse_event(1, line)
            {
                parents.insert(name, parent);
            }
        }
        parents
    }
}

/// `partition` events from `scontrol show partition -o` (one partition a
/// line, `KEY=VALUE` tokens): `PartitionName`, `PriorityJobFactor`,
/// `PriorityTier`, `MaxTime` and `TRESBillingWeights` when set.
pub fn read_partitions(source: Source<'_>) -> Result<Vec<Op>, CommandError> {
    let mut ops = Vec::new();
    for (index, text) in source.text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line = Some(index as u64 + 1);
        let err = |key: &str, reason: String| {
            CommandError::new(source.name, line, format!("field `{key}`: {reason}"))
        };
        let (mut name, mut factor, mut tier, mut max_time, mut weights) =
            (None, None, None, None, None);
        for (key, value) in pairs(text) {
            match key {
                "PartitionName" => name = Some(value.to_string()),
                "PriorityJobFactor" => {
                    factor = Some(value.parse::<u32>().map_err(|_| {
                        err(key, format!("`{value}` is not an integer from 0 to 65533"))
                    })?)
                }
                "PriorityTier" => {
                    tier = Some(value.parse::<u16>().map_err(|_| {
                        err(key, format!("`{value}` is not an integer from 0 to 65533"))
                    })?)
                }
                "MaxTime" => {
                    max_time = time_limit_secs(value).map_err(|r| err(key, r.to_string()))?
                }
                "TRESBillingWeights" => {
                    weights = Some(parse_weight_list(value).map_err(|e| err(key, e.reason))?)
                }
                _ => {}
            }
        }
        let name = name
            .filter(|n| crate::import_slurm::check_name(n).is_ok())
            .ok_or_else(|| err("PartitionName", "missing or not a name".into()))?;
        ops.push(Op::Partition {
            name,
            priority_job_factor: factor,
            tres_billing_weights: weights,
            priority: None,
            tres: None,
            max_time_secs: max_time,
            priority_tier: tier,
        });
    }
    Ok(ops)
}
