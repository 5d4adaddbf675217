//! `serve --follow-slurm`: a tap that polls a running Slurm through its own
//! commands (`fairflow_ingest::slurm_live`) and writes what changed as
//! events.
//!
//! Each poll runs squeue (pending and running jobs), sacct (the jobs that
//! finished since the last poll), sacctmgr (associations, QOS), `scontrol
//! show config/node/partition` and `scontrol show assoc_mgr flags=assoc`
//! (Slurm's raw usage), all read before anything is written: a command that
//! fails, hangs (killed after the timeout) or prints something unreadable
//! is logged with the command, the line and the reason, and the poll
//! changes nothing. Otherwise the poll's events (the differences from what
//! the follower applied last) are written in time order: policy, jobs (a
//! start or end at Slurm's own time), removed associations, then, when
//! Slurm's usage changed since the last poll (its decay thread ran) and
//! fairflow's drifted from it by more than a TRES-second, a usage
//! reconciliation (`reset_usage` and each association's own usage, Slurm's).
//!
//! **Nothing lost or doubled.** What the follower has applied (a
//! [`SlurmPosition`]: the applied policy's digest, the usage pass last
//! reconciled with, when the poll read squeue) is committed in the same
//! append as the poll's last events, as the `#tap follow-slurm` record
//! (`taps::cursor`); the policy itself is beside the log
//! (`follow_slurm::policy_file`), trusted only when the log's digest says
//! so. At start, every `full_every` polls and after a write that failed or
//! had lines rejected, the job diff starts from the engine's own jobs
//! (`Query::JobPhases`), so a gap (a restart of fairflow or of slurmctld, a
//! missed poll, a kill in the middle of a poll) is repaired by events; a
//! job that finished unseen is applied only if it was submitted after the
//! committed squeue read, so it is applied once; a reconciliation sets
//! usage rather than adding to it.
//!
//! `/healthz` is unhealthy once no poll has succeeded for `stale_after`;
//! `/metrics` has the polls, failures, reconciliations and the age of the
//! last good poll.

pub mod policy_file;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fairflow_ingest::slurm_live::command::CommandError;
use fairflow_ingest::slurm_live::diff::PollWindow;
use fairflow_ingest::slurm_live::jobs::{JobTable, LiveJob};
use fairflow_ingest::slurm_live::policy::{Policy, PolicyEventError};
use fairflow_ingest::slurm_live::{
    poll_events, reconcile_usage, Poll, PollReading, SlurmCommands, SlurmPosition, TextHashes,
};
use fairflow_ingest::LogLine;
use fairflow_model::{Event, Time};

use crate::applier::{ApplierHandle, WriteError};
use crate::backend::{Answer, Query, QueryError};
use crate::clock::wall_secs;
use crate::metrics::Metrics;
use crate::taps::cursor::TapCursor;

/// The follower's tap name in the log's cursor records.
pub const FOLLOW_SLURM_TAP: &str = "follow-slurm";

/// sacct is asked from this long before the last poll read squeue, so a
/// clock of slurmdbd's behind the follower's by up to this much loses no
/// finished job (jobs read twice are told apart by their submit time).
const SACCT_MARGIN_SECS: Time = 60;

/// How the follower polls.
#[derive(Debug, Clone)]
pub struct FollowSlurm {
    /// Time between polls.
    pub poll: Duration,
    /// How long one command may run before it is killed.
    pub command_timeout: Duration,
    /// A full comparison of the queue with the engine's every this many polls.
    pub full_every: u32,
    /// `/healthz` is unhealthy after this long without a good poll.
    pub stale_after: Duration,
    /// The cluster's associations, when sacctmgr lists several.
    pub cluster: Option<String>,
    /// The command lines.
    pub commands: SlurmCommands,
    /// Most events in one write, but a poll with finished jobs never seen is
    /// one write (they are applied with the cursor or not at all).
    pub batch_events: usize,
}

impl FollowSlurm {
    /// A poll every `poll`, commands killed after 60 s, a full comparison
    /// every 30 polls, stale after 6 polls (at least a minute), writes of at
    /// most 10,000 events.
    pub fn every(poll: Duration) -> Self {
        FollowSlurm {
            poll,
            command_timeout: Duration::from_secs(60),
            full_every: 30,
            stale_after: (poll * 6).max(Duration::from_secs(60)),
            cluster: None,
            commands: SlurmCommands::default(),
            batch_events: 10_000,
        }
    }
}

/// The follower's state between polls.
struct Follower {
    settings: FollowSlurm,
    data_dir: PathBuf,
    /// What the log says was applied (none before the first poll).
    position: Option<SlurmPosition>,
    /// The policy applied (of `position`'s digest).
    policy: Policy,
    /// The hashes of the last applied poll's policy and usage answers.
    texts: TextHashes,
    /// The jobs the last applied poll left.
    jobs: JobTable,
    /// Polls until the next full comparison (0: the next poll is one).
    until_full: u32,
}

/// Why a poll applied nothing (or, for a refused write, perhaps part of
/// itself: the next poll compares with the engine).
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// A Slurm command failed or printed what cannot be read.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The thread running the commands failed.
    #[error("the poll's thread failed: {0}")]
    Thread(tokio::task::JoinError),
    /// The engine's jobs cannot be read.
    #[error("reading the engine's jobs: {0}")]
    EngineJobs(QueryError),
    /// A line of the engine's jobs has no tab.
    #[error("the engine's job line {line} has no tab")]
    NoTab {
        /// The line, from 1.
        line: usize,
    },
    /// A line of the engine's jobs is not a job.
    #[error("the engine's job line {line}: {source}")]
    EngineJob {
        /// The line, from 1.
        line: usize,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// Fairflow's usage cannot be read.
    #[error("reading fairflow's usage: {0}")]
    Usage(QueryError),
    /// The engine answered the usage read with something else.
    #[error("reading fairflow's usage: the engine answered no table")]
    NoTable,
    /// A policy entry is not a valid event.
    #[error(transparent)]
    Policy(#[from] PolicyEventError),
    /// The applied policy's side file cannot be written.
    #[error("saving the applied policy: {0}")]
    SavePolicy(policy_file::PolicyFileError),
    /// The service is stopping.
    #[error("the service is stopping")]
    Stopping,
    /// The service refused a write.
    #[error("write refused: {0}")]
    Refused(WriteError),
}

/// The engine's jobs (`Query::JobPhases`): one a line, its id, its phase,
/// and its user, account, submit time, start time and spec as JSON.
fn read_engine_jobs(text: &str) -> Result<HashMap<String, LiveJob>, PollError> {
    let mut jobs = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let (id, json) = line
            .split_once('\t')
            .ok_or(PollError::NoTab { line: index + 1 })?;
        let job: LiveJob = serde_json::from_str(json).map_err(|source| PollError::EngineJob {
            line: index + 1,
            source,
        })?;
        jobs.insert(id.to_string(), job);
    }
    Ok(jobs)
}

/// A hash of Slurm's usage table: it changes when a decay pass ran.
fn usage_hash(usage: &[((String, Option<String>), f64)]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (key, usage) in usage {
        key.hash(&mut hasher);
        usage.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

/// Fairflow's raw usage per association.
async fn fairflow_usage(
    applier: &ApplierHandle,
) -> Result<BTreeMap<(String, Option<String>), u64>, PollError> {
    let answer = applier
        .read_answer(Query::FairshareTable)
        .await
        .map_err(PollError::Usage)?;
    let Answer::FairshareTable { table, .. } = answer else {
        return Err(PollError::NoTable);
    };
    Ok(table
        .rows
        .iter()
        .map(|row| ((row.account.clone(), row.user.clone()), row.raw_usage))
        .collect())
}

impl Follower {
    /// Run the commands off the runtime: the table goes with them (its
    /// lines are marked seen) and comes back.
    async fn read(&mut self, finished_since: Option<Time>) -> Result<PollReading, PollError> {
        let mut table = std::mem::take(&mut self.jobs);
        let settings = self.settings.clone();
        let texts = self.texts;
        let (table, reading) = tokio::task::spawn_blocking(move || {
            let poll = Poll {
                commands: &settings.commands,
                timeout: settings.command_timeout,
                cluster: settings.cluster.as_deref(),
                finished_since,
            };
            let reading = poll.run(&mut table, texts);
            (table, reading)
        })
        .await
        .map_err(PollError::Thread)?;
        self.jobs = table;
        Ok(reading?)
    }

    /// The reconciliation's events, if Slurm's usage changed since the last
    /// pass reconciled with and fairflow's drifted from it; and the pass.
    async fn reconciliation(
        &self,
        applier: &ApplierHandle,
        reading: &PollReading,
        t: Time,
    ) -> Result<(Option<u64>, Option<Vec<Event>>), PollError> {
        let last_pass = self.position.as_ref().and_then(|p| p.usage_pass);
        let Some(usage) = &reading.usage else {
            return Ok((last_pass, None));
        };
        let pass = usage_hash(usage);
        if last_pass == Some(pass) {
            return Ok((last_pass, None));
        }
        let ours = fairflow_usage(applier).await?;
        let policy = reading.policy.as_ref().unwrap_or(&self.policy);
        let Some(events) = reconcile_usage(usage, &ours, &policy.account_parents(), t) else {
            return Ok((Some(pass), None));
        };
        let (drift, association) = largest_drift(usage, &ours);
        tracing::info!(
            tap = FOLLOW_SLURM_TAP,
            drift_tres_secs = drift,
            association,
            "usage reconciled with Slurm's (the largest drift before)"
        );
        Ok((Some(pass), Some(events)))
    }

    /// One poll: read, diff, write with the cursor, then remember. The error
    /// is logged by the caller; nothing is remembered then.
    async fn poll(
        &mut self,
        applier: &ApplierHandle,
        metrics: &Metrics,
    ) -> Result<usize, PollError> {
        let listed_at = wall_secs();
        let finished_since = self
            .position
            .as_ref()
            .map(|p| p.listed_at.saturating_sub(SACCT_MARGIN_SECS));
        let reading = self.read(finished_since).await?;
        let full = self.until_full == 0;
        let engine = if full {
            let text = applier
                .read(Query::JobPhases)
                .await
                .map_err(PollError::EngineJobs)?;
            Some(read_engine_jobs(&text)?)
        } else {
            None
        };
        let gauges = applier.gauges().await.ok_or(PollError::Stopping)?;
        let submitted_through = self.position.as_ref().and_then(|p| p.submitted_through);
        // Nothing before fairflow's time nor before the last poll read
        // squeue; a first poll has nothing to date earlier than itself.
        let now = wall_secs().max(gauges.now);
        let since = match &self.position {
            Some(position) => gauges.now.max(position.listed_at).min(now),
            None => now,
        };
        let window = PollWindow {
            since,
            now,
            submitted_through,
        };
        let mut events = poll_events(&self.policy, &self.jobs, engine.as_ref(), &reading, &window)?;
        let (usage_pass, reconciled) = self.reconciliation(applier, &reading, window.now).await?;
        let reconciled = reconciled.map(|usage| events.extend(usage)).is_some();
        let policy_digest = match &reading.policy {
            Some(policy) => policy.digest(),
            None => self.policy.digest(),
        };
        // The first poll reads no finished job: those submitted before it
        // are history (in Slurm's usage, reconciled).
        let first = if self.position.is_none() {
            Some(listed_at)
        } else {
            None
        };
        let next = SlurmPosition {
            policy_digest,
            usage_pass,
            listed_at,
            submitted_through: submitted_through.max(reading.latest_submit()).max(first),
        };
        let saved_policy = self.position.as_ref().map(|p| p.policy_digest) != Some(policy_digest);
        if saved_policy {
            let policy = reading.policy.as_ref().unwrap_or(&self.policy);
            policy_file::save(&self.data_dir, policy, policy_digest)
                .map_err(PollError::SavePolicy)?;
        }
        let written = events.len();
        let unchanged = self
            .position
            .as_ref()
            .is_some_and(|p| p.policy_digest == policy_digest && p.usage_pass == usage_pass);
        if !events.is_empty() || !unchanged {
            let one_write = !reading.finished.is_empty();
            let cursor = TapCursor::new(FOLLOW_SLURM_TAP, next.clone());
            let batch = if one_write {
                usize::MAX
            } else {
                self.settings.batch_events
            };
            match write_poll(applier, events, cursor, batch).await {
                Ok(0) => {}
                Ok(rejected) => {
                    tracing::debug!(tap = FOLLOW_SLURM_TAP, rejected, "events not applied");
                    self.until_full = 0;
                }
                Err(e) => {
                    // Part of the poll may be applied: compare with the engine next.
                    self.until_full = 0;
                    return Err(e);
                }
            }
            self.position = Some(next);
        }
        if reconciled {
            metrics.slurm.reconciliations.inc();
        }
        if saved_policy {
            policy_file::prune(&self.data_dir, policy_digest);
        }
        self.remember(reading, listed_at, full);
        Ok(written)
    }

    /// After the poll's events are acknowledged: the table, policy and
    /// answers' hashes are the poll's.
    fn remember(&mut self, reading: PollReading, listed_at: Time, full: bool) {
        let latest_submit = reading.latest_submit();
        self.jobs.apply(reading.jobs);
        if let Some(policy) = reading.policy {
            self.policy = policy;
        }
        self.texts = reading.texts;
        if let Some(position) = &mut self.position {
            position.listed_at = listed_at;
            position.submitted_through = position.submitted_through.max(latest_submit);
        }
        self.until_full = if full {
            self.settings.full_every.saturating_sub(1)
        } else {
            self.until_full.saturating_sub(1)
        };
    }
}

/// The largest difference between Slurm's raw usage and fairflow's
/// (truncated, as sshare prints it), in TRES-seconds, and its association.
fn largest_drift(
    slurm: &[((String, Option<String>), f64)],
    ours: &BTreeMap<(String, Option<String>), u64>,
) -> (f64, String) {
    let mut largest = (0.0, String::new());
    for ((account, user), usage) in slurm {
        let key = (account.clone(), user.clone());
        let drift = (usage.trunc() - ours.get(&key).copied().unwrap_or(0) as f64).abs();
        if drift > largest.0 {
            largest = (
                drift,
                format!("{account}/{}", user.as_deref().unwrap_or("")),
            );
        }
    }
    largest
}

/// `events` as the lines of a write, numbered from 1.
pub fn event_lines(events: Vec<Event>) -> Vec<LogLine> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| LogLine {
            line: i as u64 + 1,
            event: Ok(event),
        })
        .collect()
}

/// Write a poll's `events` in writes of at most `batch`, the last with the
/// follower's `cursor` (logged in its append even when it has no event);
/// the applier logs and counts rejected lines. The rejected lines' count.
async fn write_poll(
    applier: &ApplierHandle,
    events: Vec<Event>,
    cursor: TapCursor,
    batch: usize,
) -> Result<usize, PollError> {
    let mut lines = event_lines(events);
    let mut rejected = 0;
    loop {
        let rest = lines.split_off(lines.len().min(batch.max(1)));
        let this = std::mem::replace(&mut lines, rest);
        let written = if lines.is_empty() {
            applier.write_from_tap(this, cursor.clone()).await
        } else {
            applier.write(this).await
        };
        match written {
            Ok(outcome) => rejected += outcome.rejected.len(),
            Err(WriteError::Stopped) => return Err(PollError::Stopping),
            Err(e) => return Err(PollError::Refused(e)),
        }
        if lines.is_empty() {
            return Ok(rejected);
        }
    }
}

/// The policy the log's cursor names, from its side file; none (every
/// policy event sent again) when it is missing or not the one named.
fn recovered_policy(data_dir: &std::path::Path, position: Option<&SlurmPosition>) -> Policy {
    let Some(position) = position else {
        return Policy::default();
    };
    policy_file::load(data_dir, position.policy_digest).unwrap_or_else(|e| {
        tracing::warn!(
            tap = FOLLOW_SLURM_TAP,
            "the applied policy is not usable, sending it all again: {e}"
        );
        Policy::default()
    })
}

/// Follow Slurm until the applier stops: poll, write, sleep `poll`;
/// `recovered` is the follower's position in the log at start.
pub async fn follow_slurm(
    settings: FollowSlurm,
    data_dir: PathBuf,
    recovered: Option<SlurmPosition>,
    applier: ApplierHandle,
    metrics: Arc<Metrics>,
) {
    let mut follower = Follower {
        policy: recovered_policy(&data_dir, recovered.as_ref()),
        settings: settings.clone(),
        data_dir,
        position: recovered,
        texts: TextHashes::default(),
        jobs: JobTable::default(),
        until_full: 0,
    };
    let started = wall_secs();
    let mut last_error: Option<String> = None;
    while !applier.stopped() {
        let began = std::time::Instant::now();
        match follower.poll(&applier, &metrics).await {
            Ok(events) => {
                metrics.slurm.polls.inc();
                metrics
                    .slurm
                    .last_good_poll
                    .store(wall_secs(), Ordering::Relaxed);
                applier.health().set_stale(None);
                if last_error.take().is_some() {
                    tracing::info!(tap = FOLLOW_SLURM_TAP, "polls succeed again");
                }
                tracing::debug!(
                    tap = FOLLOW_SLURM_TAP,
                    events,
                    millis = began.elapsed().as_millis() as u64,
                    "poll applied"
                );
            }
            Err(reason) => {
                metrics.slurm.failures.inc();
                tracing::warn!(
                    tap = FOLLOW_SLURM_TAP,
                    "poll failed, nothing applied: {reason}"
                );
                last_error = Some(reason.to_string());
            }
        }
        let last_good = metrics.slurm.last_good_poll.load(Ordering::Relaxed);
        let silent = wall_secs() - if last_good > 0 { last_good } else { started };
        if silent > settings.stale_after.as_secs() as Time {
            applier.health().set_stale(Some(format!(
                "no good Slurm poll for {silent} s{}",
                last_error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            )));
        }
        tokio::time::sleep(settings.poll).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_ingest::slurm_live::jobs::LiveState;

    #[test]
    fn the_engines_jobs_are_read_line_by_line() {
        let job = LiveJob {
            user: "u1".into(),
            account: "a".into(),
            state: LiveState::Held,
            submitted: 5,
            started: None,
            spec: Default::default(),
            sluid: Some("s00DKDVDNA0005".parse().unwrap()),
        };
        let text = format!("7\t{}\n", serde_json::to_string(&job).unwrap());
        let jobs = read_engine_jobs(&text).unwrap();
        assert_eq!(jobs["7"], job);
        assert!(read_engine_jobs("7 pending\n").is_err());
    }
}
