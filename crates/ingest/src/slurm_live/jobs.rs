//! The live queue: `squeue`'s pending and running jobs read into
//! [`LiveJob`]s, one a line of [`JOBS_FORMAT`]. Each job is kept with a
//! 64-bit hash of its line, so that a poll parses only the lines that
//! changed since the last one and returns only those, with the ids no
//! longer listed ([`JobTable::read_changes`]): an unchanged line is hashed
//! and its job marked seen in place, nothing else. From Slurm 26.05 each line
//! ends with the job's SLUID ([`JobsFormat::WithSluid`]); a line whose text
//! changes is the same job (the table is keyed by the numeric id).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use fairflow_model::event::JobSpec;
use fairflow_model::tres::TresCounts;
use fairflow_model::{Sluid, Time};

use super::command::CommandError;
use crate::import_slurm::{check_name, time_limit_secs};
use crate::slurm_time::parse_site_time;

/// squeue's `-O` fields, `|`-separated: what a job's events need.
pub const JOBS_FORMAT: &str = "JobID:|,UserName:|,Account:|,Partition:|,QOS:|,SubmitTime:|,NumCPUs:|,NumNodes:|,TimeLimit:|,EligibleTime:|,State:|,Reason:|,Nice:|,StartTime";

/// The states squeue is asked for: the jobs fairflow holds (a completing job
/// has ended already).
pub const JOB_STATES: &str = "PENDING,RUNNING,SUSPENDED,CONFIGURING";

/// What squeue's lines hold: [`JOBS_FORMAT`]'s fields, and from Slurm 26.05
/// (`super::version`) the SLUID after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobsFormat {
    /// [`JOBS_FORMAT`] (Slurm 22.05 to 25.11).
    #[default]
    Plain,
    /// [`JOBS_FORMAT`] and `Sluid` (Slurm 26.05 and later).
    WithSluid,
}

impl JobsFormat {
    /// The fields a line of this format holds, of `all` (whose last field
    /// is the SLUID's).
    pub(super) fn fields(self, all: &'static [&'static str]) -> &'static [&'static str] {
        match self {
            JobsFormat::Plain => &all[..all.len() - 1],
            JobsFormat::WithSluid => all,
        }
    }

    /// The SLUID a line of this format holds (its last cell), if any.
    pub(super) fn sluid(self, cells: &Cells<'_>) -> Result<Option<Sluid>, CellsError> {
        match self {
            JobsFormat::Plain => Ok(None),
            JobsFormat::WithSluid => cells.sluid(cells.fields.len() - 1),
        }
    }
}

/// squeue's fields as the follower reads them, the SLUID last (asked only
/// from Slurm 26.05: [`JobsFormat::fields`]).
const FIELDS: [&str; 15] = [
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
    "Sluid",
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
    /// When a running job started (squeue's `StartTime`), Unix seconds.
    #[serde(default)]
    pub started: Option<Time>,
    /// Partition(s), QOS, CPUs and nodes, time limit, nice, eligible time
    /// (its `sluid` is the field below).
    pub spec: JobSpec,
    /// Its SLUID (Slurm 26.05 and later; none before, and none for a job
    /// squeue prints `s0000000000000` for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sluid: Option<Sluid>,
}

/// One job of the table: the hash of its last squeue line, the poll that
/// last listed it, and the job.
#[derive(Debug, Clone)]
struct Entry {
    line_hash: u64,
    seen_in: u32,
    job: Arc<LiveJob>,
}

/// The jobs fairflow has applied, by id, each with the hash of its squeue
/// line. A poll reads squeue's answer against it ([`JobTable::read_changes`]):
/// an unchanged line only marks its job seen (no parse, no insert), so what
/// a poll costs beyond reading the text grows with what changed.
#[derive(Debug, Default, Clone)]
pub struct JobTable {
    jobs: FxHashMap<Arc<str>, Entry>,
    /// The number of the last read (`Entry::seen_in`).
    read_number: u32,
}

/// A job whose squeue line is new or different from the table's.
#[derive(Debug, Clone)]
pub struct ListedJob {
    /// Its id.
    pub id: Arc<str>,
    /// The hash of its line.
    pub line_hash: u64,
    /// The job as listed now.
    pub job: Arc<LiveJob>,
}

/// What one squeue answer changed against the table: the jobs listed new or
/// with a different line (in listing order), and the ids no longer listed.
#[derive(Debug, Clone, Default)]
pub struct JobChanges {
    /// New or changed jobs.
    pub listed: Vec<ListedJob>,
    /// Jobs of the table not listed any more.
    pub gone: Vec<Arc<str>>,
    /// How many jobs squeue listed.
    pub n_listed: usize,
}

impl JobChanges {
    /// Nothing changed?
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty() && self.gone.is_empty()
    }
}

fn line_hash(text: &str) -> u64 {
    let mut hasher = FxHasher::default();
    text.hash(&mut hasher);
    hasher.finish()
}

impl JobTable {
    /// The jobs, by id (in no order).
    pub fn jobs(&self) -> impl Iterator<Item = (&str, &LiveJob)> {
        self.jobs.iter().map(|(id, entry)| (&**id, &*entry.job))
    }

    /// The job `id`, if held.
    pub fn get(&self, id: &str) -> Option<&LiveJob> {
        self.jobs.get(id).map(|entry| &*entry.job)
    }

    /// How many jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// No jobs?
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// A table of squeue's output read against an empty one.
    pub fn from_output(
        command: &str,
        text: &str,
        format: JobsFormat,
    ) -> Result<JobTable, CommandError> {
        let mut table = JobTable::default();
        let changes = table.read_changes(command, text, format)?;
        table.apply(changes);
        Ok(table)
    }

    /// Read squeue's output (`format`, no header) against the table:
    /// only lines whose text differs from the table's are parsed; the jobs
    /// themselves are not changed until [`JobTable::apply`]. `command`
    /// names the output in errors; any malformed line is an error and no
    /// changes.
    pub fn read_changes(
        &mut self,
        command: &str,
        text: &str,
        format: JobsFormat,
    ) -> Result<JobChanges, CommandError> {
        self.read_number = self.read_number.wrapping_add(1);
        let read_number = self.read_number;
        let mut changes = JobChanges::default();
        let mut new_ids: FxHashSet<&str> = FxHashSet::default();
        let mut unchanged = 0usize;
        for (index, raw) in text.lines().enumerate() {
            let raw = raw.trim_end_matches('\r');
            if raw.trim().is_empty() {
                continue;
            }
            let line = index as u64 + 1;
            let err = |reason: String| CommandError::new(command, Some(line), reason);
            let id = raw.split('|').next().unwrap_or("").trim();
            let hash = line_hash(raw);
            let twice = || err(format!("job `{id}` is listed twice"));
            match self.jobs.get_mut(id) {
                Some(entry) if entry.seen_in == read_number => return Err(twice()),
                Some(entry) => {
                    entry.seen_in = read_number;
                    if entry.line_hash == hash {
                        unchanged += 1;
                        continue;
                    }
                }
                None => {
                    check_name(id).map_err(|reason| err(format!("field `JobID`: {reason}")))?;
                    if !new_ids.insert(id) {
                        return Err(twice());
                    }
                }
            }
            changes.listed.push(ListedJob {
                id: Arc::from(id),
                line_hash: hash,
                job: Arc::new(parse_job(raw, format).map_err(|e| err(e.to_string()))?),
            });
        }
        let n_known = unchanged + changes.listed.len() - new_ids.len();
        if n_known < self.jobs.len() {
            changes.gone = self
                .jobs
                .iter()
                .filter(|(_, entry)| entry.seen_in != read_number)
                .map(|(id, _)| id.clone())
                .collect();
        }
        changes.n_listed = unchanged + changes.listed.len();
        Ok(changes)
    }

    /// Make the table what squeue listed: `changes` (of
    /// [`JobTable::read_changes`] on this table) applied.
    pub fn apply(&mut self, changes: JobChanges) {
        for id in &changes.gone {
            self.jobs.remove(id);
        }
        let read_number = self.read_number;
        for listed in changes.listed {
            let entry = Entry {
                line_hash: listed.line_hash,
                seen_in: read_number,
                job: listed.job,
            };
            self.jobs.insert(listed.id, entry);
        }
    }
}

/// Why one line of a command's output cannot be read: its count of cells,
/// or a field (named) and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellsError {
    /// Not one cell per field.
    #[error("expected {expected} `|`-separated fields ({names}), found {found}")]
    Count {
        /// The fields' count.
        expected: usize,
        /// The fields' names, comma-separated.
        names: String,
        /// The cells' count.
        found: usize,
    },
    /// A field's cell is malformed.
    #[error("field `{field}`: {reason}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// The `|`-separated cells of one line of a command's output, read by
/// field (each error names its field).
pub(super) struct Cells<'a> {
    cells: Vec<&'a str>,
    fields: &'static [&'static str],
}

impl<'a> Cells<'a> {
    /// Split `text`, which must have one cell per field of `fields`.
    pub(super) fn split(
        text: &'a str,
        fields: &'static [&'static str],
    ) -> Result<Self, CellsError> {
        let cells: Vec<&str> = text.split('|').map(str::trim).collect();
        if cells.len() != fields.len() {
            return Err(CellsError::Count {
                expected: fields.len(),
                names: fields.join(","),
                found: cells.len(),
            });
        }
        Ok(Cells { cells, fields })
    }

    /// Cell `i`.
    pub(super) fn text(&self, i: usize) -> &'a str {
        self.cells[i]
    }

    /// The error of field `i`.
    pub(super) fn error(&self, i: usize, reason: impl std::fmt::Display) -> CellsError {
        CellsError::Field {
            field: self.fields[i],
            reason: reason.to_string(),
        }
    }

    /// Cell `i` as a name (a user, an account, a job id).
    pub(super) fn name(&self, i: usize) -> Result<String, CellsError> {
        check_name(self.cells[i])
            .map(|()| self.cells[i].to_string())
            .map_err(|r| self.error(i, r))
    }

    /// Cell `i` as a site time, `None` for Slurm's words for none.
    pub(super) fn time(&self, i: usize) -> Result<Option<Time>, CellsError> {
        parse_site_time(self.cells[i]).map_err(|r| self.error(i, r))
    }

    /// Cell `i` as a SLUID as Slurm prints one (`None`: empty or
    /// `s0000000000000`, a job without one).
    pub(super) fn sluid(&self, i: usize) -> Result<Option<Sluid>, CellsError> {
        Sluid::parse_printed(self.cells[i])
            .map_err(|e| self.error(i, format!("`{}`: {e}", self.cells[i])))
    }

    /// Cell `i` as a count (an integer >= 0).
    pub(super) fn count(&self, i: usize) -> Result<f64, CellsError> {
        self.cells[i]
            .parse::<u64>()
            .map(|n| n as f64)
            .map_err(|_| self.error(i, format!("`{}` is not an integer >= 0", self.cells[i])))
    }
}

/// One line of `format` as a job; the error names the field.
pub fn parse_job(text: &str, format: JobsFormat) -> Result<LiveJob, CellsError> {
    let cells = Cells::split(text, format.fields(&FIELDS))?;
    let sluid = format.sluid(&cells)?;
    let field = |i: usize, reason: String| cells.error(i, reason);
    let name = |i: usize| cells.name(i);
    let count = |i: usize| cells.count(i);
    let cells = &cells.cells;
    let list = |i: usize| -> Result<Option<String>, CellsError> {
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
        .map_err(|r| field(5, r.to_string()))?
        .ok_or_else(|| field(5, "a listed job has a submit time".into()))?;
    let started = match state {
        LiveState::Running => parse_site_time(cells[13]).map_err(|r| field(13, r.to_string()))?,
        LiveState::Pending | LiveState::Held => None,
    };
    let begin = match state {
        LiveState::Pending => parse_site_time(cells[9]).map_err(|r| field(9, r.to_string()))?,
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
        time_limit_secs: time_limit_secs(cells[8]).map_err(|r| field(8, r.to_string()))?,
        nice: Some(nice),
        begin,
        ..JobSpec::default()
    };
    Ok(LiveJob {
        user: name(1)?,
        account: name(2)?,
        state,
        submitted,
        started,
        spec,
        sluid,
    })
}
