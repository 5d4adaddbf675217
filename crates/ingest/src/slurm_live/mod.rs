//! A running Slurm read through its own commands (`fairflow import slurm
//! --live`, `fairflow serve --follow-slurm`).
//!
//! - [`command`]: one command run with a timeout (found on `PATH`,
//!   `SLURM_CONF` inherited);
//! - [`jobs`]: `squeue`'s pending and running jobs, re-parsed only where a
//!   line changed;
//! - [`policy`]: associations, QOS, configuration, cluster size and
//!   partitions as keyed events, diffed poll to poll;
//! - [`finished`]: the jobs that finished since the last poll, from one
//!   `sacct` call (their start and end times);
//! - [`diff`]: the job events from what fairflow holds to what squeue lists
//!   and sacct finished;
//! - [`usage`]: Slurm's own raw usage per association, for the follower's
//!   reconciliation ([`reconcile_usage`]);
//! - [`version`]: the cluster's Slurm version (`scontrol show config`, read
//!   first in every poll): from 26.05 squeue and sacct are asked for the
//!   jobs' SLUIDs.
//!
//! A poll ([`Poll::run`]) reads everything first and builds its events only
//! when every command answered and parsed: an error (naming the command,
//! the line and the reason) changes nothing. What it costs grows with what
//! changed: squeue's unchanged lines are hashed and marked seen, the policy
//! and usage answers are parsed only when their text changed.

pub mod command;
pub mod diff;
pub mod finished;
pub mod jobs;
pub mod policy;
pub mod usage;
pub mod version;

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::time::Duration;

use rustc_hash::FxHashMap;

use fairflow_model::event::Op;
use fairflow_model::{Event, Time};

use self::command::{CommandError, SlurmCommand};
use self::diff::PollWindow;
use self::finished::{FinishedJob, ENDED_STATES, FINISHED_FORMAT};
use self::jobs::{JobChanges, JobTable, JobsFormat, LiveJob, JOBS_FORMAT, JOB_STATES};
use self::policy::{Policy, PolicyEventError, PolicyOutputs};
use self::version::{with_field, SlurmVersion, SACCT_SLUID_FIELD, SQUEUE_SLUID_FIELD};
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
    /// Jobs finished since the last poll: `sacct -a -X -n -P -s ENDED -o
    /// FIELDS`, to which each poll adds `-S SINCE -E now`.
    pub finished: SlurmCommand,
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
            finished: SlurmCommand::new(
                "sacct",
                &["-a", "-X", "-n", "-P", "-s", ENDED_STATES, "-o", FINISHED_FORMAT],
            ),
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
    /// Run the import's commands: the configuration first, whose Slurm
    /// version says whether squeue is asked for the jobs' SLUIDs (26.05 and
    /// later: `Sluid` after the queue's ten cells).
    pub fn run(commands: &SlurmCommands, timeout: Duration) -> Result<Self, CommandError> {
        let run = |c: &SlurmCommand| c.run(timeout).map(|text| (c.line(), text));
        let config = run(&commands.config)?;
        let queue = match SlurmVersion::of_config(&config.1) {
            Some(version) if version.has_sluids() => {
                with_field(&commands.queue, SQUEUE_SLUID_FIELD)
            }
            _ => commands.queue.clone(),
        };
        Ok(LiveImportOutputs {
            outputs: [
                run(&commands.assoc)?,
                run(&commands.sshare)?,
                config,
                run(&queue)?,
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

/// What the follower has applied, committed in the log with the events of
/// each poll (the `#tap follow-slurm` record): enough to go on after a
/// restart without applying anything twice.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SlurmPosition {
    /// [`Policy::digest`] of the policy applied (the policy itself is kept
    /// beside the log).
    pub policy_digest: u64,
    /// A digest of Slurm's raw usage the last reconciliation looked at: a
    /// new one means Slurm's decay thread ran since.
    pub usage_pass: Option<u64>,
    /// When the poll began reading squeue (Unix seconds, the follower's
    /// clock): the next poll asks sacct for the jobs finished since.
    pub listed_at: Time,
    /// The latest submit time (Slurm's clock) of a job squeue listed or sacct
    /// gave so far: a finished job submitted after it was never listed.
    pub submitted_through: Option<Time>,
}

/// Hashes of the last applied poll's policy and usage answers: an answer
/// whose text did not change is not parsed again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextHashes {
    /// Of the five policy commands' answers together.
    pub policy: Option<u64>,
    /// Of `scontrol show assoc_mgr flags=assoc`'s answer.
    pub usage: Option<u64>,
}

/// A 64-bit hash of texts (FxHash: stable for a given build; the digests
/// kept in the log use [`Policy::digest`]).
fn text_hash<'a>(texts: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    for text in texts {
        text.hash(&mut hasher);
    }
    hasher.finish()
}

/// What one poll read, ready to become events.
#[derive(Debug)]
pub struct PollReading {
    /// The policy, when its answers changed since the last applied poll.
    pub policy: Option<Policy>,
    /// squeue's answer against the table.
    pub jobs: JobChanges,
    /// Slurm's raw usage per association (`UsageRaw`), when its answer
    /// changed.
    pub usage: Option<Vec<(AssocKey, f64)>>,
    /// The jobs sacct says finished since the last poll (none asked at the
    /// first).
    pub finished: FxHashMap<String, FinishedJob>,
    /// The hashes of this poll's answers.
    pub texts: TextHashes,
    /// The cluster's Slurm, when `scontrol show config` says (`None`: it
    /// printed no version; read as before 26.05).
    pub version: Option<SlurmVersion>,
}

impl PollReading {
    /// The latest submit time of the jobs this poll read (new or changed
    /// in squeue, finished in sacct), if any.
    pub fn latest_submit(&self) -> Option<Time> {
        let listed = self.jobs.listed.iter().map(|l| l.job.submitted);
        let finished = self.finished.values().map(|f| f.submitted);
        listed.chain(finished).max()
    }
}

/// One poll: run every command, parse every output that changed; any
/// failure is the command's error and nothing else.
pub struct Poll<'a> {
    /// The command lines.
    pub commands: &'a SlurmCommands,
    /// How long each command may take before it is killed.
    pub timeout: Duration,
    /// The cluster whose associations are read, when sacctmgr lists several.
    pub cluster: Option<&'a str>,
    /// Ask sacct for the jobs finished since then (none: not asked).
    pub finished_since: Option<Time>,
}

impl Poll<'_> {
    /// Run the commands and read their outputs against `table` (the last
    /// applied jobs: unchanged lines are only marked seen) and `last` (the
    /// hashes of the last applied answers: an unchanged one is not parsed).
    pub fn run(&self, table: &mut JobTable, last: TextHashes) -> Result<PollReading, CommandError> {
        let run = |c: &SlurmCommand| c.run(self.timeout).map(|text| (c.line(), text));
        let c = self.commands;
        // The version first: it decides what squeue and sacct are asked.
        let config = run(&c.config)?;
        let version = SlurmVersion::of_config(&config.1);
        let (format, jobs_command, finished_command) = job_commands(c, version);
        let (jobs_line, jobs_text) = run(&jobs_command)?;
        let jobs = table.read_changes(&jobs_line, &jobs_text, format)?;
        drop(jobs_text);
        let finished = match self.finished_since {
            Some(since) => {
                let (line, text) = run(&finished::finished_command(&finished_command, since))?;
                finished::read_finished(&line, &text, format)?
            }
            None => FxHashMap::default(),
        };
        let [assoc, qos, nodes, partitions] = [&c.assoc, &c.qos, &c.nodes, &c.partitions].map(run);
        let (assoc, qos, nodes, partitions) = (assoc?, qos?, nodes?, partitions?);
        let policy_hash =
            text_hash([&assoc, &qos, &config, &nodes, &partitions].map(|o| o.1.as_str()));
        let policy = if last.policy == Some(policy_hash) {
            None
        } else {
            let outputs = PolicyOutputs {
                assoc: source(&assoc),
                qos: source(&qos),
                config: source(&config),
                nodes: source(&nodes),
                partitions: source(&partitions),
            };
            Some(Policy::read(&outputs, self.cluster)?)
        };
        let (usage_line, usage_text) = run(&c.usage)?;
        let usage_hash = text_hash([usage_text.as_str()]);
        let usage = if last.usage == Some(usage_hash) {
            None
        } else {
            Some(usage::read_assoc_usage(&usage_line, &usage_text)?)
        };
        Ok(PollReading {
            policy,
            jobs,
            usage,
            finished,
            texts: TextHashes {
                policy: Some(policy_hash),
                usage: Some(usage_hash),
            },
            version,
        })
    }
}

/// What squeue's and sacct's lines hold on the cluster's Slurm `version`,
/// and the two commands that print them: `commands`' own before 26.05 (or
/// when no version was printed), with `Sluid` / `OriginalSLUID` from 26.05.
pub fn job_commands(
    commands: &SlurmCommands,
    version: Option<SlurmVersion>,
) -> (JobsFormat, SlurmCommand, SlurmCommand) {
    if version.is_some_and(SlurmVersion::has_sluids) {
        (
            JobsFormat::WithSluid,
            with_field(&commands.jobs, SQUEUE_SLUID_FIELD),
            with_field(&commands.finished, SACCT_SLUID_FIELD),
        )
    } else {
        (
            JobsFormat::Plain,
            commands.jobs.clone(),
            commands.finished.clone(),
        )
    }
}

/// The events of one poll, in time order, from what fairflow holds (the
/// applied policy, the last applied job table, and at a full comparison the
/// engine's own jobs) to what the poll read: new and changed policy at the
/// window's start, then the jobs' events, then removed associations at the
/// poll's time.
pub fn poll_events(
    applied: &Policy,
    table: &JobTable,
    engine: Option<&HashMap<String, LiveJob>>,
    reading: &PollReading,
    window: &PollWindow,
) -> Result<Vec<Event>, PolicyEventError> {
    let (mut events, removals) = match &reading.policy {
        Some(next) => applied.changes(next, window.since)?,
        None => (Vec::new(), Vec::new()),
    };
    events.extend(diff::queue_events(
        table,
        engine,
        &reading.jobs,
        &reading.finished,
        window,
    ));
    events.extend(removals.into_iter().map(|event| Event {
        t: window.now,
        op: event.op,
    }));
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
mod sluid_tests;
#[cfg(test)]
mod tests;
