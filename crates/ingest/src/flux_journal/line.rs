//! One journal line applied to the journal's tracks: the line's job id and
//! events read, each event turned into fairflow's (a `submit` into the job
//! and its association, later events by the job's phase), with the job's
//! track and the line's clock as they will be if the line is accepted.

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::limits::MAX_TIME;
use fairflow_model::{Event, Time};
use serde_json::{Map, Value};

use super::{
    fault, jobspec_count, r_tres, system_name, tres_of, Fault, FluxJournal, Phase, Track,
    URGENCY_DEFAULT, URGENCY_MAX,
};

/// A line being applied (a line is about one job): that job's track and the
/// time as they will be if it is accepted.
pub(super) struct LineState<'a> {
    pub(super) journal: &'a FluxJournal,
    /// The line's job, once read.
    pub(super) id: Option<u64>,
    /// The job's track (`None`: not seen, or cleaned).
    pub(super) track: Option<Track>,
    pub(super) last_t: Time,
    /// The line is about a job whose `submit` was not seen.
    pub(super) needs_submit: bool,
}

/// One event of a line, read: its index in `events`, name, time (never
/// before the line's previous one) and context.
struct JournalEvent<'v> {
    index: usize,
    name: &'v str,
    t: Time,
    context: Option<&'v Value>,
}

impl JournalEvent<'_> {
    /// The path of this event's `field`, for a fault.
    fn at(&self, field: &str) -> String {
        format!("events[{}].{field}", self.index)
    }

    /// The context's `key`, if given.
    fn context_field(&self, key: &str) -> Option<&Value> {
        self.context.and_then(|c| c.get(key))
    }

    /// `op` at this event's time.
    fn event(&self, op: Op) -> Event {
        Event { t: self.t, op }
    }
}

/// The job a line is about, from its `id`; `None` for the backlog sentinel
/// (id -1, which has no events).
fn line_job_id(object: &Map<String, Value>, events: &[Value]) -> Result<Option<u64>, Fault> {
    match object.get("id") {
        Some(Value::Number(n)) if n.as_i64() == Some(-1) => {
            if events.is_empty() {
                Ok(None)
            } else {
                Err(fault(
                    "events",
                    "the backlog sentinel (id -1) has no events",
                ))
            }
        }
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| fault("id", format!("{n} is not a job id"))),
        _ => Err(fault("id", "missing or not a job id")),
    }
}

impl LineState<'_> {
    /// The events of line `text`, or why it is rejected.
    pub(super) fn apply(&mut self, text: &str) -> Result<Vec<Event>, Fault> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| fault("", format!("not valid JSON: {e}")))?;
        let object = value
            .as_object()
            .ok_or_else(|| fault("", "must be a JSON object"))?;
        let events = object
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| fault("events", "missing or not an array"))?;
        let Some(id) = line_job_id(object, events)? else {
            return Ok(Vec::new());
        };
        self.id = Some(id);
        self.track = self.journal.jobs.get(&id).cloned();
        let jobspec = object.get("jobspec");
        let r = object.get("R");
        let mut out = Vec::new();
        for (index, event) in events.iter().enumerate() {
            let event = self.read_event(index, event)?;
            if event.name == "submit" {
                self.submit(id, &event, jobspec, &mut out)?;
                continue;
            }
            let Some(track) = self.track.as_mut() else {
                if matches!(event.name, "priority" | "depend" | "validate" | "memo") {
                    // Harmless without the job; the journal may start late.
                    continue;
                }
                self.needs_submit = true;
                return Err(fault(
                    event.at("name"),
                    format!("no `submit` seen for job {id}"),
                ));
            };
            let job = id.to_string();
            if transition(self.journal, track, &event, job, r, &mut out)? {
                self.track = None;
            }
        }
        Ok(out)
    }

    /// Event `index` of the line read: its name and its time (moving the
    /// line's clock).
    fn read_event<'v>(
        &mut self,
        index: usize,
        event: &'v Value,
    ) -> Result<JournalEvent<'v>, Fault> {
        let at = |field: &str| format!("events[{index}].{field}");
        let name = event
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| fault(at("name"), "missing or not a string"))?;
        let ts = event
            .get("timestamp")
            .and_then(Value::as_f64)
            .filter(|ts| ts.is_finite() && *ts >= 0.0 && *ts <= MAX_TIME as f64)
            .ok_or_else(|| fault(at("timestamp"), "missing or not a time"))?;
        let t = (ts.floor() as Time).max(self.last_t);
        self.last_t = t;
        Ok(JournalEvent {
            index,
            name,
            t,
            context: event.get("context"),
        })
    }

    /// A `submit`: the job, as its user's association in its bank (the
    /// jobspec's, else the user's default) with its queue, resources,
    /// duration and urgency; held at urgency 0.
    fn submit(
        &mut self,
        id: u64,
        event: &JournalEvent,
        jobspec: Option<&Value>,
        out: &mut Vec<Event>,
    ) -> Result<(), Fault> {
        if self.track.is_some() {
            return Err(fault(
                event.at("name"),
                format!("job {id} was already submitted"),
            ));
        }
        let userid = event
            .context_field("userid")
            .and_then(Value::as_u64)
            .and_then(|u| u32::try_from(u).ok())
            .ok_or_else(|| fault(event.at("context.userid"), "missing or not a user id"))?;
        let urgency = match event.context_field("urgency") {
            None => URGENCY_DEFAULT,
            Some(u) => u
                .as_u64()
                .filter(|u| *u <= URGENCY_MAX)
                .ok_or_else(|| fault(event.at("context.urgency"), "not an urgency 0..31"))?,
        };
        let (user, bank) = self.user_and_bank(userid, event, jobspec)?;
        let queue = self.queue(jobspec)?;
        let resources = jobspec.and_then(|j| j.get("resources"));
        let tres = resources.map(|res| {
            let cores = jobspec_count(res, "core", 0);
            let nodes = jobspec_count(res, "node", 0);
            let nodes = if nodes == 0 && cores > 0 { 1 } else { nodes };
            tres_of(nodes, cores, jobspec_count(res, "gpu", 0))
        });
        let time_limit_secs = jobspec
            .and_then(|j| j.pointer("/attributes/system/duration"))
            .and_then(Value::as_f64)
            .filter(|d| d.is_finite() && *d >= 1.0)
            .map(|d| d.ceil() as u64);
        let job = id.to_string();
        out.push(event.event(Op::Submit {
            job: job.clone(),
            user,
            account: bank,
            spec: JobSpec {
                partition: queue,
                tres,
                time_limit_secs,
                urgency: Some(urgency as u8),
                ..JobSpec::default()
            },
            submitted: None,
        }));
        let held = urgency == 0;
        if held {
            out.push(event.event(Op::Hold { job }));
        }
        self.track = Some(Track {
            phase: Phase::Pending,
            held,
        });
        Ok(())
    }

    /// The user name of `userid` and the bank its job runs in (the
    /// jobspec's, else the user's default), which must be one of its banks.
    fn user_and_bank(
        &self,
        userid: u32,
        event: &JournalEvent,
        jobspec: Option<&Value>,
    ) -> Result<(String, String), Fault> {
        let user = self.journal.users.get(&userid).ok_or_else(|| {
            fault(
                event.at("context.userid"),
                format!("user id {userid} has no association in the flux-accounting database"),
            )
        })?;
        let bank = match system_name(jobspec, "bank")? {
            Some(bank) => bank,
            None if !user.default_bank.is_empty() => user.default_bank.clone(),
            None => {
                return Err(fault(
                    event.at("context.userid"),
                    format!("user `{}` has no default bank", user.username),
                ))
            }
        };
        if !user.banks.contains(&bank) {
            return Err(fault(
                "jobspec.attributes.system.bank",
                format!(
                    "user `{}` has no association in bank `{bank}`",
                    user.username
                ),
            ));
        }
        Ok((user.username.clone(), bank))
    }

    /// A jobspec's queue, checked against the database's when it denies
    /// unknown queues.
    fn queue(&self, jobspec: Option<&Value>) -> Result<Option<String>, Fault> {
        let queue = system_name(jobspec, "queue")?;
        if let Some(q) = &queue {
            if self.journal.deny_unknown_queues && !self.journal.queues.contains(q) {
                return Err(fault(
                    "jobspec.attributes.system.queue",
                    format!(
                        "queue `{q}` is not in the flux-accounting database (deny_unknown_queues)"
                    ),
                ));
            }
        }
        Ok(queue)
    }
}

/// An event after `submit` of a job whose `track` is known: what it does
/// in the job's phase, one arm per event name (names and phases not listed
/// change nothing). True when the job is cleaned (its track is dropped).
fn transition(
    journal: &FluxJournal,
    track: &mut Track,
    event: &JournalEvent,
    job: String,
    r: Option<&Value>,
    out: &mut Vec<Event>,
) -> Result<bool, Fault> {
    let mut emit = |op: Op| out.push(event.event(op));
    match (event.name, track.phase) {
        ("jobspec-update", Phase::Pending) => {
            if let Some(update) = jobspec_update(journal, event, job)? {
                emit(update);
            }
        }
        ("urgency", Phase::Pending) => {
            let urgency = event
                .context_field("urgency")
                .and_then(Value::as_u64)
                .filter(|u| *u <= URGENCY_MAX)
                .ok_or_else(|| {
                    fault(
                        event.at("context.urgency"),
                        "missing or not an urgency 0..31",
                    )
                })?;
            emit(Op::Update {
                job: job.clone(),
                account: None,
                spec: JobSpec {
                    urgency: Some(urgency as u8),
                    ..JobSpec::default()
                },
            });
            if urgency == 0 && !track.held {
                emit(Op::Hold { job });
                track.held = true;
            } else if urgency != 0 && track.held {
                emit(Op::Release { job });
                track.held = false;
            }
        }
        ("alloc", Phase::Pending) => {
            if track.held {
                emit(Op::Release { job: job.clone() });
                track.held = false;
            }
            let tres = r.map(r_tres).transpose()?;
            emit(Op::Start { job, tres });
            track.phase = Phase::Running;
        }
        ("exception", Phase::Pending) | ("invalidate", Phase::Pending) => {
            let severity = match event.context_field("severity") {
                None if event.name == "invalidate" => 0,
                v => v.and_then(Value::as_u64).ok_or_else(|| {
                    fault(event.at("context.severity"), "missing or not a severity")
                })?,
            };
            if severity == 0 {
                emit(Op::Cancel { job });
                track.phase = Phase::Ended;
            }
        }
        ("clean", phase) => {
            match phase {
                Phase::Pending => emit(Op::Cancel { job }),
                Phase::Running => emit(Op::End { job }),
                Phase::Ended => {}
            }
            return Ok(true);
        }
        _ => {}
    }
    Ok(false)
}

/// A pending job's `jobspec-update`: its new bank and queue (each a name,
/// the queue known when unknown ones are denied), as an `update`; `None`
/// when it changes neither.
fn jobspec_update(
    journal: &FluxJournal,
    event: &JournalEvent,
    job: String,
) -> Result<Option<Op>, Fault> {
    let name_of = |key: &str| -> Result<Option<String>, Fault> {
        match event.context_field(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(fault(event.at(&format!("context.{key}")), "must be a name")),
        }
    };
    let bank = name_of("attributes.system.bank")?;
    let queue = name_of("attributes.system.queue")?;
    if let Some(q) = &queue {
        if journal.deny_unknown_queues && !journal.queues.contains(q) {
            return Err(fault(
                event.at("context.attributes.system.queue"),
                format!("queue `{q}` is not in the flux-accounting database (deny_unknown_queues)"),
            ));
        }
    }
    Ok((bank.is_some() || queue.is_some()).then(|| Op::Update {
        job,
        account: bank,
        spec: JobSpec {
            partition: queue,
            ..JobSpec::default()
        },
    }))
}
