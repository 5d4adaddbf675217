//! Flux's job events as a tap: the job manager's `events-journal` responses,
//! one JSON object a line as a consumer writes them
//! (`{"id":I,"events":[{"timestamp":T,"name":N,"context":{..}}],"jobspec"?:{..},"R"?:{..}}`;
//! the end of the backlog is the sentinel `{"id":-1,"events":[]}`), turned
//! into fairflow's job events. Event names and contexts are RFC 21's:
//!
//! | Flux event | fairflow |
//! |---|---|
//! | `submit` (`userid`, `urgency`; the line's `jobspec`: `attributes.system.bank`, `.queue`, `.duration`, its `resources`) | `submit` (user and bank by the `userid`'s association in the flux-accounting database, the user's default bank when the jobspec names none; queue as the partition; nodes, cores and GPUs as `tres`), and `hold` at urgency 0 |
//! | `jobspec-update` (`attributes.system.bank` / `.queue`) | `update` of a pending job |
//! | `urgency` (`urgency`) | `update` of the urgency; `hold` when it becomes 0, `release` when it leaves 0 |
//! | `alloc` (the line's `R`: its `R_lite` ranks, cores, GPUs) | `start` with the allocated nodes, cores and GPUs (Flux's RUN state, flux-accounting's `t_run`) |
//! | `exception` with `severity` 0 | `cancel` of a pending job (a running one ends at `clean`) |
//! | `invalidate` | `cancel` |
//! | `clean` | `end` of a running job (flux-accounting's `t_inactive`), `cancel` of a pending one |
//! | `priority`, `depend`, `validate`, `start`, `finish`, `release`, `free`, `memo`, others | nothing (fairflow computes the priority itself) |
//!
//! Under `UsageModel=flux` (which `import flux` sets) a running job charges
//! flux-accounting's usage: its nodes, cores and GPUs times their weights,
//! per second from `alloc` to `clean`.
//!
//! **A job's events before its `submit`.** Flux writes a job's `submit`
//! first (RFC 21: it opens every job's eventlog) and the journal keeps each
//! job's events in order, but a journal pieced together (merged files, a
//! consumer restarted mid-stream) may carry a job's later events before its
//! `submit`. Such a line is held, not rejected, and applied right after the
//! `submit` arrives, so the job's charge is not lost. Held lines are bounded
//! ([`MAX_HELD_LINES`], [`MAX_HELD_BYTES`]) and wait at most
//! [`MAX_HELD_SECS`] of journal time; what is dropped (the oldest first) is
//! reported by [`FluxJournal::take_dropped`] as a rejection of its own line,
//! saying why. Harmless events (`priority`, `depend`, `validate`, `memo`) of
//! an unknown job are skipped as before.
//!
//! Times are the events' `timestamp`s in whole seconds (rounded down), kept
//! from going backwards (an event older than the previous one takes its
//! time). Job ids are Flux's integer ids, written in decimal.
//!
//! **Architecture invariant:** a malformed line, or one about a job or user
//! that cannot be placed, is a [`Rejection`] naming the line, the field and
//! the reason; a rejected line changes nothing, and nothing here panics on
//! input.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use fairflow_model::event::Op;
use fairflow_model::limits::{MAX_TIME, MAX_TRES_COUNT};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Event, Time};
use serde_json::Value;

use crate::check::check_event;
use crate::import_flux::{FluxDb, FluxUser};
use crate::Rejection;

mod line;
use line::LineState;

/// Most journal lines held waiting for their job's `submit`.
pub const MAX_HELD_LINES: usize = 10_000;

/// Most bytes of journal lines held waiting for their job's `submit`.
pub const MAX_HELD_BYTES: usize = 16 << 20;

/// Longest a line waits for its job's `submit`, seconds of journal time.
pub const MAX_HELD_SECS: Time = 3600;

/// Flux's default urgency (RFC 30).
const URGENCY_DEFAULT: u64 = 16;

/// Flux's largest urgency (RFC 30).
const URGENCY_MAX: u64 = 31;

/// Where a job of the journal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Pending,
    Running,
    /// Cancelled (an exception or invalidation before it ran); its `clean`
    /// is still to come.
    Ended,
}

/// What the tap remembers of a job until its `clean`.
#[derive(Debug, Clone)]
struct Track {
    phase: Phase,
    held: bool,
}

/// A line about a job whose `submit` has not been seen yet.
#[derive(Debug, Clone)]
struct HeldLine {
    job: u64,
    number: u64,
    text: String,
    /// The journal's time when it was held.
    held_at: Time,
}

/// The state of one journal: the users and queues of the flux-accounting
/// database, the jobs seen and not yet cleaned, and the lines waiting for
/// their job's `submit`.
#[derive(Debug, Clone)]
pub struct FluxJournal {
    users: BTreeMap<u32, FluxUser>,
    queues: BTreeSet<String>,
    deny_unknown_queues: bool,
    jobs: HashMap<u64, Track>,
    last_t: Time,
    /// The job of the line applied last.
    line_job: Option<u64>,
    held: VecDeque<HeldLine>,
    /// Lines held per job.
    held_jobs: HashMap<u64, usize>,
    held_bytes: usize,
    /// Held lines dropped or rejected when applied, not yet taken.
    dropped: Vec<Rejection>,
}

/// One line's rejection, before its line number is known.
type Fault = (String, String);

fn fault(field: impl Into<String>, reason: impl Into<String>) -> Fault {
    (field.into(), reason.into())
}

/// The size of an idset (`0-3,5,7-8`), RFC 22, or why it has none: not an
/// idset, or more ids than a `u64` counts.
fn idset_size(text: &str) -> Result<u64, &'static str> {
    const NOT: &str = "is not an idset";
    let mut count = 0u64;
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| NOT);
        let size = match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                hi.checked_sub(lo).ok_or(NOT)?.checked_add(1)
            }
            None => number(part).map(|_| Some(1))?,
        };
        count = size
            .and_then(|size| count.checked_add(size))
            .ok_or("holds more ids than a count can")?;
    }
    Ok(count)
}

/// [`idset_size`], if it has one.
#[cfg(test)]
fn idset_count(text: &str) -> Option<u64> {
    idset_size(text).ok()
}

/// The nodes, cores and GPUs of an `R` (RFC 20: `execution.R_lite`, each
/// entry's `rank` idset times its `children`' `core` and `gpu` idsets).
fn r_tres(r: &Value) -> Result<TresCounts, Fault> {
    let lite = r
        .pointer("/execution/R_lite")
        .and_then(Value::as_array)
        .ok_or_else(|| fault("R.execution.R_lite", "missing or not an array"))?;
    let (mut nodes, mut cores, mut gpus) = (0u64, 0u64, 0u64);
    for (i, entry) in lite.iter().enumerate() {
        let idset = |path: &str, required: bool| -> Result<u64, Fault> {
            let field = format!("R.execution.R_lite[{i}].{}", path.replace('/', "."));
            match entry.pointer(&format!("/{path}")) {
                None if !required => Ok(0),
                Some(Value::String(s)) => {
                    idset_size(s).map_err(|why| fault(field, format!("`{s}` {why}")))
                }
                _ => Err(fault(field, "missing or not an idset string")),
            }
        };
        let ranks = idset("rank", true)?;
        let field = |what: &str| format!("R.execution.R_lite[{i}].{what}");
        let per_rank = |path: &str, what: &str| -> Result<u64, Fault> {
            ranks.checked_mul(idset(path, false)?).ok_or_else(|| {
                fault(
                    field(&path.replace('/', ".")),
                    format!("{what} per rank times {ranks} ranks overflows"),
                )
            })
        };
        let (entry_cores, entry_gpus) = (
            per_rank("children/core", "cores")?,
            per_rank("children/gpu", "GPUs")?,
        );
        let sum = |total: u64, add: u64, path: &str| {
            total
                .checked_add(add)
                .filter(|t| *t as f64 <= MAX_TRES_COUNT)
                .ok_or_else(|| {
                    fault(
                        field(path),
                        format!("the allocation's count exceeds {MAX_TRES_COUNT:e}"),
                    )
                })
        };
        nodes = sum(nodes, ranks, "rank")?;
        cores = sum(cores, entry_cores, "children.core")?;
        gpus = sum(gpus, entry_gpus, "children.gpu")?;
    }
    Ok(tres_of(nodes, cores, gpus))
}

fn tres_of(nodes: u64, cores: u64, gpus: u64) -> TresCounts {
    let mut tres = TresCounts::new();
    tres.insert("node".into(), nodes as f64);
    tres.insert("cpu".into(), cores as f64);
    if gpus > 0 {
        tres.insert("gres/gpu".into(), gpus as f64);
    }
    tres
}

/// The count of resources of `kind` a jobspec's `resources` list asks for:
/// each entry's `count` (a number, or `{"min":..}`) times, unless it is of
/// `kind` itself, what its `with` list holds.
fn jobspec_count(resources: &Value, kind: &str, depth: usize) -> u64 {
    let Some(list) = resources.as_array() else {
        return 0;
    };
    if depth > 16 {
        return 0;
    }
    list.iter()
        .map(|entry| {
            let count = match entry.get("count") {
                Some(Value::Object(range)) => range.get("min").and_then(Value::as_u64),
                Some(other) => other.as_u64(),
                None => Some(1),
            }
            .unwrap_or(1);
            if entry.get("type").and_then(Value::as_str) == Some(kind) {
                count
            } else {
                entry.get("with").map_or(0, |with| {
                    count.saturating_mul(jobspec_count(with, kind, depth + 1))
                })
            }
        })
        .fold(0u64, u64::saturating_add)
}

/// A jobspec's system attribute `name` as a name, if it has one.
fn system_name(jobspec: Option<&Value>, name: &str) -> Result<Option<String>, Fault> {
    match jobspec.and_then(|j| j.pointer(&format!("/attributes/system/{name}"))) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && !s.contains([' ', ',', '|']) => {
            Ok(Some(s.clone()))
        }
        Some(_) => Err(fault(
            format!("jobspec.attributes.system.{name}"),
            "must be a name",
        )),
    }
}

impl FluxJournal {
    /// A journal mapped to the database's associations and queues.
    pub fn new(db: &FluxDb) -> Self {
        FluxJournal {
            users: db.users.clone(),
            queues: db.queues.clone(),
            deny_unknown_queues: db.deny_unknown_queues,
            jobs: HashMap::new(),
            last_t: 0,
            line_job: None,
            held: VecDeque::new(),
            held_jobs: HashMap::new(),
            held_bytes: 0,
            dropped: Vec::new(),
        }
    }

    /// The time of the first event of a line, if it has one: where a log
    /// made of the database and a journal starts.
    pub fn first_time(text: &str) -> Option<Time> {
        let value: Value = serde_json::from_str(text).ok()?;
        let ts = value.pointer("/events/0/timestamp")?.as_f64()?;
        (ts.is_finite() && ts >= 0.0 && ts <= MAX_TIME as f64).then(|| ts.floor() as Time)
    }

    /// The events of one line (none for the backlog sentinel and events
    /// fairflow has no use for), or why the line is rejected (then nothing
    /// changes). A line about a job not submitted yet is held (no events
    /// now); the events of the lines held for a job come after its
    /// `submit`'s (module documentation).
    pub fn line(&mut self, number: u64, text: &str) -> Result<Vec<Event>, Rejection> {
        let mut events = match self.apply_line(number, text) {
            Applied::Events(events) => events,
            Applied::Rejected(rejection) => return Err(rejection),
            Applied::NeedsSubmit(job) => {
                self.hold(job, number, text);
                return Ok(Vec::new());
            }
        };
        if let Some(&job) = self.line_job.as_ref() {
            if self.jobs.contains_key(&job) && self.held_jobs.contains_key(&job) {
                events.extend(self.release_held(job));
            }
        }
        self.expire_held();
        Ok(events)
    }

    /// Held lines dropped (bounds, time) or rejected when applied after
    /// their `submit`, each a rejection of its own line, since the last call.
    pub fn take_dropped(&mut self) -> Vec<Rejection> {
        std::mem::take(&mut self.dropped)
    }

    /// Lines held waiting for their job's `submit`.
    pub fn held_lines(&self) -> usize {
        self.held.len()
    }

    /// Apply one line to the journal's state.
    fn apply_line(&mut self, number: u64, text: &str) -> Applied {
        let mut state = LineState {
            journal: self,
            id: None,
            track: None,
            last_t: self.last_t,
            needs_submit: false,
        };
        let result = state.apply(text).and_then(checked);
        let LineState {
            id,
            track,
            last_t,
            needs_submit,
            ..
        } = state;
        self.line_job = id;
        match result {
            Ok(events) => {
                self.last_t = last_t;
                if let Some(id) = id {
                    match track {
                        Some(track) => self.jobs.insert(id, track),
                        None => self.jobs.remove(&id),
                    };
                }
                Applied::Events(events)
            }
            Err(_) if needs_submit => Applied::NeedsSubmit(id.unwrap_or_default()),
            Err((field, reason)) => Applied::Rejected(Rejection::new(
                number,
                Some(field.as_str()).filter(|f| !f.is_empty()),
                reason,
            )),
        }
    }

    /// Hold a line about `job` until its `submit`, dropping the oldest held
    /// lines beyond the bounds.
    fn hold(&mut self, job: u64, number: u64, text: &str) {
        self.held_bytes += text.len();
        *self.held_jobs.entry(job).or_default() += 1;
        self.held.push_back(HeldLine {
            job,
            number,
            text: text.to_string(),
            held_at: self.last_t,
        });
        while self.held.len() > MAX_HELD_LINES || self.held_bytes > MAX_HELD_BYTES {
            let reason = format!(
                "more than {MAX_HELD_LINES} lines or {MAX_HELD_BYTES} bytes wait for their job's                  `submit`: the oldest is dropped"
            );
            self.drop_oldest_held(&reason);
        }
    }

    /// Drop the oldest held line, reporting it with `reason`.
    fn drop_oldest_held(&mut self, reason: &str) {
        let Some(line) = self.held.pop_front() else {
            return;
        };
        self.forget_held(&line);
        self.dropped.push(Rejection::new(
            line.number,
            Some("id"),
            format!(
                "job {}: no `submit` seen for it; the line was held waiting for one and is                  dropped ({reason})",
                line.job
            ),
        ));
    }

    fn forget_held(&mut self, line: &HeldLine) {
        self.held_bytes -= line.text.len();
        if let Some(count) = self.held_jobs.get_mut(&line.job) {
            *count -= 1;
            if *count == 0 {
                self.held_jobs.remove(&line.job);
            }
        }
    }

    /// Drop the held lines that waited longer than [`MAX_HELD_SECS`].
    fn expire_held(&mut self) {
        while self
            .held
            .front()
            .is_some_and(|line| line.held_at.saturating_add(MAX_HELD_SECS) < self.last_t)
        {
            let reason = format!("it waited more than {MAX_HELD_SECS} s of journal time");
            self.drop_oldest_held(&reason);
        }
    }

    /// Apply the lines held for `job` (just submitted), in order: their
    /// events; what fails now is reported by [`FluxJournal::take_dropped`].
    fn release_held(&mut self, job: u64) -> Vec<Event> {
        let (mine, rest): (VecDeque<HeldLine>, VecDeque<HeldLine>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|line| line.job == job);
        self.held = rest;
        let mut events = Vec::new();
        for line in mine {
            self.forget_held(&line);
            match self.apply_line(line.number, &line.text) {
                Applied::Events(more) => events.extend(more),
                Applied::Rejected(rejection) => self.dropped.push(rejection),
                Applied::NeedsSubmit(_) => self.dropped.push(Rejection::new(
                    line.number,
                    Some("id"),
                    format!("job {job} ended before this line, held for its `submit`, applied"),
                )),
            }
        }
        events
    }

    /// The jobs seen and not yet cleaned.
    pub fn active_jobs(&self) -> usize {
        self.jobs.len()
    }
}

/// The events of a line if each is within the bounds every event meets
/// (`check`), else the first fault, named by the line's field that gave it.
fn checked(events: Vec<Event>) -> Result<Vec<Event>, Fault> {
    for event in &events {
        if let Err(r) = check_event(0, event) {
            let field = r.field.unwrap_or_default();
            let source = match field.split('.').next().unwrap_or("") {
                "tres" if matches!(event.op, Op::Start { .. }) => "R".to_string(),
                "tres" => "jobspec.resources".to_string(),
                "time_limit" => "jobspec.attributes.system.duration".to_string(),
                "t" => "events.timestamp".to_string(),
                _ => field.clone(),
            };
            return Err(fault(
                source,
                format!("gives a `{}` whose `{field}` {}", event.op.name(), r.reason),
            ));
        }
    }
    Ok(events)
}

/// What applying one line did.
enum Applied {
    Events(Vec<Event>),
    Rejected(Rejection),
    /// The line is about this job, whose `submit` was not seen.
    NeedsSubmit(u64),
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod bounds_tests;
