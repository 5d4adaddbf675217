//! Jobs that finished between two polls, from one `sacct` call per poll
//! (slurmdbd's records, not slurmctld's): `sacct -a -X -n -P -S SINCE -E now
//! -s ENDED -o FINISHED_FORMAT`, where `SINCE` is when the last applied poll
//! read squeue. With states and a window, sacct lists the jobs that reached
//! one of those states in the window, so every job that left squeue since
//! the last poll is in it (once slurmdbd has its record), and so is every job
//! that was submitted and finished between two polls without squeue ever
//! listing it. Their start and end come from here, not from the poll's time.
//! From Slurm 26.05 each line ends with the job's `OriginalSLUID`
//! ([`JobsFormat::WithSluid`]), the SLUID squeue showed for its last run.

use fairflow_model::event::JobSpec;
use fairflow_model::tres::TresCounts;
use fairflow_model::Time;
use rustc_hash::FxHashMap;

use super::command::{CommandError, SlurmCommand};
use super::jobs::{Cells, CellsError, JobsFormat};
use crate::import_slurm::time_limit_secs;
use crate::slurm_time::format_site_time;

/// sacct's `-o` fields, `-P` separates them with `|`.
pub const FINISHED_FORMAT: &str =
    "JobID,User,Account,Partition,QOS,Submit,Start,End,State,NCPUS,NNodes,Timelimit";

/// The states of a job that has left the queue for good (`sacct -s`):
/// cancelled, completed, failed, timed out, node failure, out of memory,
/// deadline, preempted, boot failure. A requeued job is pending again and
/// squeue lists it.
pub const ENDED_STATES: &str = "CA,CD,F,TO,NF,OOM,DL,PR,BF";

/// sacct's fields as the follower reads them, the SLUID last (asked only
/// from Slurm 26.05: `JobsFormat::fields`).
const FIELDS: [&str; 13] = [
    "JobID",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Submit",
    "Start",
    "End",
    "State",
    "NCPUS",
    "NNodes",
    "Timelimit",
    "OriginalSLUID",
];

/// One finished job as sacct shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedJob {
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// Submit time, Unix seconds.
    pub submitted: Time,
    /// When it started, if it ran.
    pub started: Option<Time>,
    /// When it ended (or was cancelled).
    pub ended: Time,
    /// Its state's first word (`COMPLETED`, `CANCELLED`, ...).
    pub state: String,
    /// The partition it ran in, QOS, CPUs and nodes, time limit, SLUID.
    pub spec: JobSpec,
}

/// The sacct command of a poll: `base` (its program and fixed arguments)
/// with the window from `since` (site time) to now.
pub fn finished_command(base: &SlurmCommand, since: Time) -> SlurmCommand {
    let mut command = base.clone();
    let since = format_site_time(since);
    command
        .args
        .extend(["-S".to_string(), since, "-E".into(), "now".into()]);
    command
}

/// Read sacct's output (`format`, `-P -n`) by job id; a job
/// listed twice keeps its last line (sacct lists a requeued job's last
/// run). Any malformed line is an error naming the line and the field.
pub fn read_finished(
    command: &str,
    text: &str,
    format: JobsFormat,
) -> Result<FxHashMap<String, FinishedJob>, CommandError> {
    let mut jobs = FxHashMap::default();
    for (index, raw) in text.lines().enumerate() {
        let raw = raw.trim_end_matches('\r');
        if raw.trim().is_empty() {
            continue;
        }
        let err = |reason: String| CommandError::new(command, Some(index as u64 + 1), reason);
        let (id, job) = parse_finished(raw, format).map_err(|e| err(e.to_string()))?;
        jobs.insert(id, job);
    }
    Ok(jobs)
}

/// One line of `format`: the job id and the job; the error names the
/// field.
pub fn parse_finished(text: &str, format: JobsFormat) -> Result<(String, FinishedJob), CellsError> {
    let cells = Cells::split(text, format.fields(&FIELDS))?;
    let sluid = format.sluid(&cells)?;
    let field = |i: usize, reason: String| cells.error(i, reason);
    let name = |i: usize| cells.name(i);
    let time = |i: usize| cells.time(i);
    let count = |i: usize| cells.count(i);
    let text = |i: usize| cells.text(i);
    let optional = |i: usize| -> Result<Option<String>, CellsError> {
        match text(i) {
            "" | "(null)" | "N/A" => Ok(None),
            _ => name(i).map(Some),
        }
    };
    let id = name(0)?;
    let submitted = time(5)?.ok_or_else(|| field(5, "a finished job has a submit time".into()))?;
    let ended = time(7)?.ok_or_else(|| field(7, "a finished job has an end time".into()))?;
    let started = time(6)?;
    if started.is_some_and(|s| s > ended) || submitted > ended {
        return Err(field(
            7,
            format!("`{}` is before the job's submit or start", text(7)),
        ));
    }
    let state = text(8).split_whitespace().next().unwrap_or("");
    if state.is_empty() {
        return Err(field(8, "must not be empty".into()));
    }
    let mut tres = TresCounts::new();
    tres.insert("cpu".to_string(), count(9)?);
    tres.insert("node".to_string(), count(10)?);
    let spec = JobSpec {
        partition: optional(3)?,
        qos: optional(4)?,
        tres: Some(tres),
        time_limit_secs: match text(11) {
            "Partition_Limit" => None,
            limit => time_limit_secs(limit).map_err(|r| field(11, r.to_string()))?,
        },
        sluid,
        ..JobSpec::default()
    };
    let job = FinishedJob {
        user: name(1)?,
        account: name(2)?,
        submitted,
        started,
        ended,
        state: state.to_string(),
        spec,
    };
    Ok((id, job))
}
