//! The live queue: `squeue`'s pending and running jobs read into
//! [`LiveJob`]s, one a line of [`JOBS_FORMAT`]. Each line is kept as a
//! 64-bit hash of its text, so that a poll parses only the lines that
//! changed since the last one ([`JobTable::read`]) and shares the rest (id
//! and job) with the last table.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use fairflow_model::event::JobSpec;
use fairflow_model::tres::TresCounts;
use fairflow_model::Time;

use super::command::CommandError;
use crate::import_slurm::{check_name, time_limit_secs};
use crate::slurm_time::parse_site_time;

/// squeue's `-O` fields, `|`-separated: what a job's events need.
pub const JOBS_FORMAT: &str = "JobID:|,UserName:|,Account:|,Partition:|,QOS:|,SubmitTime:|,NumCPUs:|,NumNodes:|,TimeLimit:|,EligibleTime:|,State:|,Reason:|,Nice:|,StartTime";

/// The states squeue is asked for: the jobs fairflow holds (a completing job
/// has ended already).
pub const JOB_STATES: &str = "PENDING,RUNNING,SUSPENDED,CONFIGURING";

const FIELDS: [&str; 14] = [
    "JobID",
    "UserName",
    "Account",
    "Partition",
    "QOS",
    "SubmitTime",
    "NumCPUs",
    "NumNodes",
    "TimeLimit",
    "EligibleTime",
    "State",
    "Reason",
    "Nice",
    "StartTime",
];

/// Where a job stands in Slurm.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum LiveState {
    /// Pending and eligible to be ranked.
    Pending,
    /// Pending, held by its user or an administrator (reason `JobHeld*`).
    Held,
    /// Running (or suspended, or configuring: allocated).
    Running,
}

/// One job as squeue shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LiveJob {
    /// The user.
    pub user: String,
    /// The account.
    pub account: String,
    /// Pending, held or running.
    pub state: LiveState,
    /// Submit time, Unix seconds.
    pub submitted: Time,
    /// Partition(s), QOS, CPUs and nodes, time limit, nice, eligible time.
    pub spec: JobSpec,
}

/// The jobs of the last poll, by id, each with the hash of its line.
#[derive(Debug, Default, Clone)]
pub struct JobTable {
    jobs: FxHashMap<Arc<str>, (u64, Arc<LiveJob>)>,
}

fn line_hash(text: &str) -> u64 {
    let mut hasher = FxHasher::default();
    text.hash(&mut hasher);
    hasher.finish()
}

impl JobTable {
    /// The jobs, by id.
    pub fn jobs(&self) -> impl Iterator<Item = (&str, &LiveJob)> {
        self.jobs.iter().map(|(id, (_, job))| (&**id, &**job))
    }

    /// The job `id`, if listed.
    pub fn get(&self, id: &str) -> Option<&LiveJob> {
        self.jobs.get(id).map(|(_, job)| &**job)
    }

    /// Is job `id` new in `self`, or its line different from `previous`'s?
    pub fn changed_since(&self, previous: &JobTable, id: &str) -> bool {
        match (self.jobs.get(id), previous.jobs.get(id)) {
            (Some((now, _)), Some((before, _))) => now != before,
            _ => true,
        }
    }

    /// How many jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// No jobs?
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Read squeue's output (`JOBS_FORMAT`, no header) as the new table,
    /// parsing only lines whose text differs from the previous poll's
    /// (`previous`); `command` names the output in errors. Any malformed
    /// line is an error and no table.
    pub fn read(previous: &JobTable, command: &str, text: &str) -> Result<JobTable, CommandError> {
        let mut jobs: FxHashMap<Arc<str>, (u64, Arc<LiveJob>)> = FxHashMap::default();
        jobs.reserve(previous.jobs.len().max(16));
        for (index, raw) in text.lines().enumerate() {
            let line = index as u64 + 1;
            let raw = raw.trim_end_matches('\r');
            if raw.trim().is_empty() {
                continue;
            }
            let err = |reason: String| CommandError::new(command, Some(line), reason);
            let id = raw.split('|').next().unwrap_or("").trim();
            check_name(id).map_err(|reason| err(format!("field `JobID`: {reason}")))?;
            let hash = line_hash(raw);
            let (key, job) = match previous.jobs.get_key_value(id) {
                Some((key, (old, job))) if *old == hash => (key.clone(), job.clone()),
                _ => (Arc::from(id), Arc::new(parse_job(raw).map_err(err)?)),
            };
            if jobs.insert(key, (hash, job)).is_some() {
                return Err(err(format!("job `{id}` is listed twice")));
            }
        }
        Ok(JobTable { jobs })
    }
}

/// One line of `JOBS_FORMAT` as a job; the error names the field.
pub fn parse_job(text: &str) -> Result<LiveJob, String> {
    let cells: Vec<&str> = text.split('|').map(str::trim).collect();
    if cells.len() != FIELDS.len() {
        return Err(format!(
            "expected {} `|`-separated fields ({}), found {}",
            FIELDS.len(),
            FIELDS.join(","),
            cells.len()
        ));
    }
    let field = |i: usize, reason: String| format!("field `{}`: {reason}", FIELDS[i]);
    let name = |i: usize| -> Result<String, String> {
        check_name(cells[i])
            .map(|()| cells[i].to_string())
            .map_err(|r| field(i, r.to_string()))
    };
    let count = |i: usize| -> Result<f64, String> {
        cells[i]
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| field(i, format!("`{}` is not an integer >= 0", cells[i])))
    };
    let list = |i: usize| -> Result<Option<String>, String> {
        match cells[i] {
            "" | "(null)" | "N/A" => Ok(None),
            text => {
                for part in text.split(',') {
                    check_name(part).map_err(|r| field(i, format!("`{text}`: {r}")))?;
                }
                Ok(Some(text.to_string()))
            }
        }
    };
    let state = match cells[10] {
        "PENDING" if cells[11].starts_with("JobHeld") => LiveState::Held,
        "PENDING" => LiveState::Pending,
        "RUNNING" | "SUSPENDED" | "CONFIGURING" => LiveState::Running,
        other => {
            return Err(field(
                10,
                format!("`{other}` is not a state squeue was asked for"),
            ))
        }
    };
    let submitted = parse_site_time(cells[5])
        .map_err(|r| field(5, r))?
        .ok_or_else(|| field(5, "a listed job has a submit time".into()))?;
    let begin = match state {
        LiveState::Pending => parse_site_time(cells[9]).map_err(|r| field(9, r))?,
        LiveState::Held | LiveState::Running => None,
    };
    let nice = cells[12]
        .parse::<i64>()
        .map_err(|_| field(12, format!("`{}` is not an integer", cells[12])))?;
    let mut tres = TresCounts::new();
    tres.insert("cpu".to_string(), count(6)?);
    tres.insert("node".to_string(), count(7)?);
    let spec = JobSpec {
        partition: list(3)?,
        qos: list(4)?,
        tres: Some(tres),
        time_limit_secs: time_limit_secs(cells[8]).map_err(|r| field(8, r))?,
        nice: Some(nice),
        begin,
        ..JobSpec::default()
    };
    Ok(LiveJob {
        user: name(1)?,
        account: name(2)?,
        state,
        submitted,
        spec,
    })
}
