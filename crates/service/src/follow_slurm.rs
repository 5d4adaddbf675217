//! `serve --follow-slurm`: a tap that polls a running Slurm through its own
//! commands (`fairflow_ingest::slurm_live`) and writes what changed as
//! events.
//!
//! Each poll runs squeue (pending and running jobs), sacctmgr (associations,
//! QOS), `scontrol show config/node/partition` and `scontrol show assoc_mgr
//! flags=assoc` (Slurm's raw usage), all read before anything is written:
//! a command that fails, hangs (killed after the timeout) or prints
//! something unreadable is logged with the command, the line and the
//! reason, and the poll changes nothing. Otherwise the poll's events (the
//! differences from what the follower applied last) are written in order:
//! policy, jobs, removed associations, then, when Slurm's usage changed
//! since the last poll (its decay thread ran) and fairflow's drifted from it
//! by more than a TRES-second, a usage reconciliation (`reset_usage` and
//! each association's own usage, Slurm's).
//!
//! **Nothing lost or doubled.** At start, every `full_every` polls and after
//! any failed write, the job diff starts from the engine's own job states
//! (`Query::JobPhases`), so a gap (a restart of fairflow or of slurmctld, a
//! missed poll) is repaired by events; an event repeated after a partial
//! write is rejected by the book as impossible (a second submit of a job,
//! an end of an ended one), and a reconciliation sets usage rather than
//! adding to it.
//!
//! **The cursor** ([`FollowCursor`]: the policy last applied and the usage
//! pass last reconciled) is loaded at start and saved after the events of a
//! poll that changed it are acknowledged, through [`CursorStore`];
//! [`FileCursor`] keeps it in `follow-slurm.json` of the data directory.
//! A cursor older than the log (a crash between the two) re-sends policy
//! events that set what is set already.
//!
//! `/healthz` is unhealthy once no poll has succeeded for `stale_after`;
//! `/metrics` has the polls, failures, reconciliations and the age of the
//! last good poll.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use fairflow_ingest::slurm_live::jobs::{JobTable, LiveState};
use fairflow_ingest::slurm_live::policy::Policy;
use fairflow_ingest::slurm_live::{poll_events, reconcile_usage, Poll, PollReading, SlurmCommands};
use fairflow_ingest::LogLine;
use fairflow_model::{Event, Time};

use crate::applier::{ApplierHandle, WriteError};
use crate::backend::Query;
use crate::metrics::{AssociationGauge, Metrics};

/// Most events written in one batch.
pub const FOLLOW_BATCH_EVENTS: usize = 10_000;

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
    /// The cluster's associations, when sacctmgr lists several clusters.
    pub cluster: Option<String>,
    /// The command lines.
    pub commands: SlurmCommands,
}

impl FollowSlurm {
    /// A poll every `poll`, commands killed after 60 s (at most `poll`
    /// times 6), a full comparison every 30 polls, stale after 6 polls
    /// (at least a minute).
    pub fn every(poll: Duration) -> Self {
        FollowSlurm {
            poll,
            command_timeout: Duration::from_secs(60),
            full_every: 30,
            stale_after: (poll * 6).max(Duration::from_secs(60)),
            cluster: None,
            commands: SlurmCommands::default(),
        }
    }
}

/// What the follower has applied, kept between runs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FollowCursor {
    /// The policy (associations, QOS, partitions, configuration) applied.
    pub policy: Policy,
    /// A hash of Slurm's raw usage last reconciled with: a new one means
    /// Slurm's decay thread ran since.
    pub usage_pass: Option<u64>,
}

/// Where the cursor is kept.
pub trait CursorStore: Send + 'static {
    /// The cursor saved last, if any.
    fn load(&self) -> Result<Option<FollowCursor>, String>;
    /// Save the cursor (after the events that made it are acknowledged).
    fn save(&mut self, cursor: &FollowCursor) -> Result<(), String>;
}

/// The cursor as `follow-slurm.json` in the data directory, replaced
/// atomically (written aside, synced, renamed).
#[derive(Debug, Clone)]
pub struct FileCursor {
    /// The file.
    pub path: PathBuf,
}

impl FileCursor {
    /// `follow-slurm.json` in `data_dir`.
    pub fn in_data_dir(data_dir: &std::path::Path) -> Self {
        FileCursor {
            path: data_dir.join("follow-slurm.json"),
        }
    }
}

impl CursorStore for FileCursor {
    fn load(&self) -> Result<Option<FollowCursor>, String> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: {e}", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", self.path.display())),
        }
    }

    fn save(&mut self, cursor: &FollowCursor) -> Result<(), String> {
        use std::io::Write;
        let aside = self.path.with_extension("json.new");
        let bytes = serde_json::to_vec(cursor).map_err(|e| e.to_string())?;
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&aside)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&aside, &self.path)
        };
        write().map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Unix seconds now.
pub fn wall_secs() -> Time {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Time)
}

/// The follower's state between polls.
struct Follower<S> {
    settings: FollowSlurm,
    store: S,
    cursor: FollowCursor,
    jobs: JobTable,
    /// Polls until the next full comparison (0: the next poll is one).
    until_full: u32,
}

/// The engine's job states (`Query::JobPhases`).
fn read_phases(text: &str) -> HashMap<String, LiveState> {
    text.lines()
        .filter_map(|line| {
            let (id, phase) = line.split_once('\t')?;
            let state = match phase {
                "pending" => LiveState::Pending,
                "held" => LiveState::Held,
                "running" => LiveState::Running,
                _ => return None,
            };
            Some((id.to_string(), state))
        })
        .collect()
}

/// A hash of Slurm's usage table: it changes when a decay pass ran.
fn usage_hash(reading: &PollReading) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (key, usage) in &reading.usage {
        key.hash(&mut hasher);
        usage.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

impl<S: CursorStore> Follower<S> {
    /// Fairflow's raw usage per association.
    async fn fairflow_usage(
        applier: &ApplierHandle,
    ) -> Result<BTreeMap<(String, Option<String>), u64>, String> {
        let text = applier
            .read(Query::Associations { limit: usize::MAX })
            .await
            .map_err(|e| format!("reading fairflow's usage: {e}"))?;
        let rows: Vec<AssociationGauge> =
            serde_json::from_str(&text).map_err(|e| format!("reading fairflow's usage: {e}"))?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let user = (!row.user.is_empty()).then_some(row.user);
                ((row.account, user), row.raw_usage)
            })
            .collect())
    }

    /// One poll: read, diff, write, then remember. The error is logged by
    /// the caller; nothing is remembered then.
    async fn poll(&mut self, applier: &ApplierHandle, metrics: &Metrics) -> Result<usize, String> {
        let previous = std::mem::take(&mut self.jobs);
        let settings = self.settings.clone();
        let (previous, reading) = tokio::task::spawn_blocking(move || {
            let poll = Poll {
                commands: &settings.commands,
                timeout: settings.command_timeout,
                cluster: settings.cluster.as_deref(),
            };
            let reading = poll.run(&previous);
            (previous, reading)
        })
        .await
        .map_err(|e| format!("the poll's thread failed: {e}"))?;
        self.jobs = previous;
        let reading = reading.map_err(|e| e.to_string())?;
        let full = self.until_full == 0;
        let engine = if full {
            let text = applier
                .read(Query::JobPhases)
                .await
                .map_err(|e| format!("reading the engine's jobs: {e}"))?;
            Some(read_phases(&text))
        } else {
            None
        };
        let gauges = applier.gauges().await.ok_or("the service is stopping")?;
        let t = wall_secs().max(gauges.now);
        let mut events = poll_events(
            &self.cursor.policy,
            &self.jobs,
            engine.as_ref(),
            &reading,
            t,
        )?;
        let pass = usage_hash(&reading);
        let mut reconciled = false;
        if self.cursor.usage_pass != Some(pass) {
            let ours = Self::fairflow_usage(applier).await?;
            let parents = reading.policy.account_parents();
            if let Some(usage) = reconcile_usage(&reading.usage, &ours, &parents, t) {
                let (drift, association) = largest_drift(&reading.usage, &ours);
                tracing::info!(
                    tap = "follow-slurm",
                    drift_tres_secs = drift,
                    association,
                    "usage reconciled with Slurm's (the largest drift before)"
                );
                events.extend(usage);
                reconciled = true;
            }
        }
        let written = events.len();
        if let Err(e) = write_events(applier, events).await {
            // Part of the poll may be applied: compare with the engine next.
            self.until_full = 0;
            return Err(e);
        }
        if reconciled {
            metrics.slurm.reconciliations.inc();
        }
        let next = FollowCursor {
            policy: reading.policy,
            usage_pass: Some(pass),
        };
        if next != self.cursor {
            self.store
                .save(&next)
                .map_err(|e| format!("saving the cursor: {e}"))?;
            self.cursor = next;
        }
        self.jobs = reading.jobs;
        self.until_full = if full {
            self.settings.full_every.saturating_sub(1)
        } else {
            self.until_full - 1
        };
        Ok(written)
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

/// Write `events` in batches of at most [`FOLLOW_BATCH_EVENTS`]; the
/// applier logs and counts rejected lines.
async fn write_events(applier: &ApplierHandle, events: Vec<Event>) -> Result<(), String> {
    let mut lines: Vec<LogLine> = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| LogLine {
            line: i as u64 + 1,
            event: Ok(event),
        })
        .collect();
    while !lines.is_empty() {
        let rest = lines.split_off(lines.len().min(FOLLOW_BATCH_EVENTS));
        match applier.write(std::mem::replace(&mut lines, rest)).await {
            Ok(outcome) if !outcome.rejected.is_empty() => {
                // Repeats after a gap (a second submit of a job) are among
                // them; the applier logs each.
                tracing::debug!(
                    tap = "follow-slurm",
                    rejected = outcome.rejected.len(),
                    "events not applied"
                );
            }
            Ok(_) => {}
            Err(WriteError::Stopped) => return Err("the service is stopping".into()),
            Err(e) => return Err(format!("write refused: {e}")),
        }
    }
    Ok(())
}

/// Follow Slurm until the applier stops: poll, write, sleep `poll`.
pub async fn follow_slurm<S: CursorStore>(
    settings: FollowSlurm,
    store: S,
    applier: ApplierHandle,
    metrics: Arc<Metrics>,
) {
    let cursor = match store.load() {
        Ok(cursor) => cursor.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(
                tap = "follow-slurm",
                "the cursor is unreadable, starting afresh: {e}"
            );
            FollowCursor::default()
        }
    };
    let mut follower = Follower {
        settings: settings.clone(),
        store,
        cursor,
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
                    tracing::info!(tap = "follow-slurm", "polls succeed again");
                }
                tracing::debug!(
                    tap = "follow-slurm",
                    events,
                    millis = began.elapsed().as_millis() as u64,
                    "poll applied"
                );
            }
            Err(reason) => {
                metrics.slurm.failures.inc();
                tracing::warn!(
                    tap = "follow-slurm",
                    "poll failed, nothing applied: {reason}"
                );
                last_error = Some(reason);
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

    #[test]
    fn the_engines_phases_are_read_line_by_line() {
        let phases = read_phases("7\tpending\n8\theld\n9\trunning\nbad line\n");
        assert_eq!(phases.len(), 3);
        assert_eq!(phases["7"], LiveState::Pending);
        assert_eq!(phases["8"], LiveState::Held);
        assert_eq!(phases["9"], LiveState::Running);
    }

    #[test]
    fn the_file_cursor_round_trips_and_is_absent_at_first() {
        let dir = std::env::temp_dir().join(format!("ff-cursor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut store = FileCursor::in_data_dir(&dir);
        assert_eq!(store.load().unwrap(), None);
        let cursor = FollowCursor {
            policy: Policy {
                entries: vec![("qos:normal".into(), "{}".into())],
            },
            usage_pass: Some(42),
        };
        store.save(&cursor).unwrap();
        assert_eq!(store.load().unwrap(), Some(cursor));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
