//! A running Slurm read through its own commands (`fairflow import slurm
//! --live`, `fairflow serve --follow-slurm`).
//!
//! - [`command`]: one command run with a timeout (found on `PATH`,
//!   `SLURM_CONF` inherited);
//! - [`jobs`]: `squeue`'s pending and running jobs, re-parsed only where a
//!   line changed;
//! - [`policy`]: associations, QOS, configuration, cluster size and
//!   partitions as keyed events, diffed poll to poll;
//! - [`diff`]: the job events from what fairflow holds to what squeue lists;
//! - [`usage`]: Slurm's own raw usage per association, for the follower's
//!   reconciliation ([`reconcile_usage`]).
//!
//! A poll ([`Poll::run`]) reads everything first and builds its events only
//! when every command answered and parsed: an error (naming the command,
//! the line and the reason) changes nothing.

pub mod command;
pub mod diff;
pub mod jobs;
pub mod policy;
pub mod usage;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

use self::command::{CommandError, SlurmCommand};
use self::jobs::{JobTable, LiveState, JOBS_FORMAT, JOB_STATES};
use self::policy::{Policy, PolicyOutputs};
use crate::import_slurm::{AssocKey, Source};

/// The command lines a poll and the live import run (Slurm 22.05 to 26.x).
#[derive(Debug, Clone)]
pub struct SlurmCommands {
    /// Associations: `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`.
    pub assoc: SlurmCommand,
    /// QOS: `sacctmgr -P show qos format=Name,Priority,UsageFactor`.
    pub qos: SlurmCommand,
    /// The configuration: `scontrol show config`.
    pub config: SlurmCommand,
    /// The nodes (the cluster's size): `scontrol show node`.
    pub nodes: SlurmCommand,
    /// The partitions: `scontrol show partition -o`.
    pub partitions: SlurmCommand,
    /// Pending and running jobs: `squeue -h -a -t STATES -O FIELDS`.
    pub jobs: SlurmCommand,
    /// Raw usage per association: `scontrol show assoc_mgr flags=assoc`.
    pub usage: SlurmCommand,
    /// The import's usage: `sshare -a -l -P`.
    pub sshare: SlurmCommand,
    /// The import's queue: `squeue -h -t PD -O ...` (the import's ten cells).
    pub queue: SlurmCommand,
}

impl Default for SlurmCommands {
    fn default() -> Self {
        SlurmCommands {
            assoc: SlurmCommand::new(
                "sacctmgr",
                &["-nP", "show", "assoc", "format=Cluster,Account,User,Share,ParentName"],
            ),
            qos: SlurmCommand::new(
                "sacctmgr",
                &["-P", "show", "qos", "format=Name,Priority,UsageFactor"],
            ),
            config: SlurmCommand::new("scontrol", &["show", "config"]),
            nodes: SlurmCommand::new("scontrol", &["show", "node"]),
            partitions: SlurmCommand::new("scontrol", &["show", "partition", "-o"]),
            jobs: SlurmCommand::new("squeue", &["-h", "-a", "-t", JOB_STATES, "-O", JOBS_FORMAT]),
            usage: SlurmCommand::new("scontrol", &["show", "assoc_mgr", "flags=assoc"]),
            sshare: SlurmCommand::new("sshare", &["-a", "-l", "-P"]),
            queue: SlurmCommand::new(
                "squeue",
                &[
                    "-h",
                    "-t",
                    "PD",
                    "-O",
                    "JobID:|,UserName:|,Account:|,Partition:|,QOS:|,SubmitTime:|,NumCPUs:|,NumNodes:|,TimeLimit:|,EligibleTime",
                ],
            ),
        }
    }
}

/// The outputs of `fairflow import slurm --live`'s commands, each with its
/// command line (the name its errors carry).
#[derive(Debug, Clone)]
pub struct LiveImportOutputs {
    /// `(command line, output)` of the associations, `sshare`, the
    /// configuration, the queue, the QOS and the nodes, in that order.
    pub outputs: [(String, String); 6],
}

impl LiveImportOutputs {
    /// Run the import's commands.
    pub fn run(commands: &SlurmCommands, timeout: Duration) -> Result<Self, CommandError> {
        let run = |c: &SlurmCommand| c.run(timeout).map(|text| (c.line(), text));
        Ok(LiveImportOutputs {
            outputs: [
                run(&commands.assoc)?,
                run(&commands.sshare)?,
                run(&commands.config)?,
                run(&commands.queue)?,
                run(&commands.qos)?,
                run(&commands.nodes)?,
            ],
        })
    }
}

/// A command's `(line, output)` as an import source.
fn source((name, text): &(String, String)) -> Source<'_> {
    Source { name, text }
}

/// What one poll read, ready to become events.
#[derive(Debug)]
pub struct PollReading {
    /// The policy it read.
    pub policy: Policy,
    /// The jobs squeue listed.
    pub jobs: JobTable,
    /// Slurm's raw usage per association (`UsageRaw`).
    pub usage: Vec<(AssocKey, f64)>,
}

/// One poll: run every command, parse every output; any failure is the
/// command's error and nothing else.
pub struct Poll<'a> {
    /// The command lines.
    pub commands: &'a SlurmCommands,
    /// How long each command may take before it is killed.
    pub timeout: Duration,
    /// The cluster whose associations are read, when sacctmgr lists several.
    pub cluster: Option<&'a str>,
}

impl Poll<'_> {
    /// Run the commands and read their outputs; `previous` (the last table)
    /// spares the lines that did not change.
    pub fn run(&self, previous: &JobTable) -> Result<PollReading, CommandError> {
        let run = |c: &SlurmCommand| c.run(self.timeout).map(|text| (c.line(), text));
        let c = self.commands;
        let jobs = run(&c.jobs)?;
        let jobs = JobTable::read(previous, &jobs.0, &jobs.1)?;
        let [assoc, qos, config, nodes, partitions] =
            [&c.assoc, &c.qos, &c.config, &c.nodes, &c.partitions].map(run);
        let (assoc, qos, config, nodes, partitions) = (assoc?, qos?, config?, nodes?, partitions?);
        let policy = Policy::read(
            &PolicyOutputs {
                assoc: source(&assoc),
                qos: source(&qos),
                config: source(&config),
                nodes: source(&nodes),
                partitions: source(&partitions),
            },
            self.cluster,
        )?;
        let (usage_line, usage_text) = run(&c.usage)?;
        let usage = usage::read_assoc_usage(&usage_line, &usage_text)?;
        Ok(PollReading {
            policy,
            jobs,
            usage,
        })
    }
}

/// The events of one poll at `t`, from what fairflow holds (the applied
/// policy, the last applied job table, and at a full comparison the
/// engine's own job states) to what the poll read: new and changed policy,
/// then the jobs' events, then removed associations.
pub fn poll_events(
    applied: &Policy,
    previous: &JobTable,
    engine: Option<&HashMap<String, LiveState>>,
    reading: &PollReading,
    t: Time,
) -> Result<Vec<Event>, String> {
    let (mut events, removals) = applied.changes(&reading.policy, t)?;
    events.extend(
        diff::queue_events(previous, engine, &reading.jobs, t)
            .into_iter()
            .map(|op| Event { t, op }),
    );
    events.extend(removals);
    Ok(events)
}

/// The usage events that bring fairflow's raw usage (`fairflow_raw`, per
/// association, truncated to whole TRES-seconds as sshare prints it) to
/// Slurm's (`slurm_raw`, `UsageRaw`), or `None` when every association is
/// within one TRES-second already. The event format has no negative
/// charge, so the correction is a `reset_usage` and each association's own
/// usage (an account's less its children's) charged again, at `t`.
pub fn reconcile_usage(
    slurm_raw: &[(AssocKey, f64)],
    fairflow_raw: &BTreeMap<AssocKey, u64>,
    parents: &BTreeMap<String, String>,
    t: Time,
) -> Option<Vec<Event>> {
    let drifted = slurm_raw.iter().any(|(key, usage)| {
        let ours = fairflow_raw.get(key).copied().unwrap_or(0) as f64;
        (usage.trunc() - ours).abs() > 1.0
    });
    if !drifted {
        return None;
    }
    let mut events = vec![Event {
        t,
        op: Op::ResetUsage,
    }];
    for ((account, user), amount) in usage::own_assoc_usage(slurm_raw.to_vec(), parents) {
        if amount > 0.0 {
            events.push(Event {
                t,
                op: Op::Usage {
                    account,
                    user,
                    amount,
                    period: None,
                },
            });
        }
    }
    Some(events)
}

#[cfg(test)]
mod tests;
