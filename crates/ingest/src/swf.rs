//! Standard Workload Format (SWF 2.2) traces to events, as interfaces.md says:
//! each job becomes `submit` at its submit time, `start` at submit + wait and
//! `end` at start + run time; user `U` of group `G` becomes user association
//! `u<U>` in account `g<G>` (created just before its first job); the header's
//! `MaxNodes`/`MaxProcs` become the `cluster` event; usage is charged by the
//! running jobs. Unknown waits (`-1`) count as 0; a job with an unknown run
//! time is cancelled at its submit time. The events come out in time order:
//! jobs are taken by submit time (then line), whatever the file's order, so an
//! account or user is created before its first job. A job whose number was
//! already seen, or whose times or sizes fall outside what the engines hold
//! (`model::limits`), is rejected naming the line and field: whatever this
//! writes replays with no rejection.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::limits::{time_in_range, MAX_DURATION_SECS, MAX_TRES_COUNT};
use fairflow_model::tres::TresCounts;
use fairflow_model::{Event, Shares, Time};

use crate::check::check_event;
use crate::reader::LogLine;
use crate::Rejection;

mod read;

/// What an SWF header says about the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwfHeader {
    /// `UnixStartTime`: the epoch of the trace's relative times.
    pub unix_start_time: Time,
    /// `MaxNodes`, if given.
    pub max_nodes: Option<u64>,
    /// `MaxProcs`, if given.
    pub max_procs: Option<u64>,
}

const FIELD_NAMES: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job",
    "think time",
];

/// Convert an SWF trace into log lines: events (each carrying its SWF line
/// number) in time order, and rejections for malformed job lines.
pub fn convert_swf<R: BufRead>(reader: R) -> Result<Vec<LogLine>, std::io::Error> {
    let read::SwfTrace {
        header,
        mut jobs,
        mut lines,
    } = read::read_swf(reader)?;
    // By submit time, then line: creations come before their first job.
    jobs.sort_by_key(|(line, v)| (v[1], *line));
    let mut events = vec![cluster_event(&header, &jobs)];
    let mut known = Known::default();
    for (line, v) in jobs {
        match job_events(header.unix_start_time, line, &v, &mut known) {
            Ok(job) => events.extend(job),
            Err(rejection) => lines.push(LogLine {
                line,
                event: Err(rejection),
            }),
        }
    }
    // Stable: a job's own events, and creations before first use, keep their order.
    events.sort_by_key(|(t, _, _)| *t);
    // Within range by construction; checked as every event is all the same.
    lines.extend(events.into_iter().map(|(_, line, event)| LogLine {
        line,
        event: check_event(line, &event).map(|()| event),
    }));
    Ok(lines)
}

/// An event with its time and SWF line, for sorting into time order.
type TimedEvent = (Time, u64, Event);

/// The `cluster` event, at the first submit time: `MaxProcs` (else
/// `MaxNodes`, else 1) CPUs on `MaxNodes` (else that many) nodes.
fn cluster_event(header: &SwfHeader, jobs: &[(u64, [i64; 18])]) -> TimedEvent {
    let base = header.unix_start_time;
    let first_submit = jobs
        .iter()
        .filter_map(|(_, v)| base.checked_add(v[1].max(0)).filter(|t| time_in_range(*t)))
        .min()
        .unwrap_or(base);
    let procs = header.max_procs.or(header.max_nodes).unwrap_or(1);
    let nodes = header.max_nodes.unwrap_or(procs);
    let event = Event {
        t: first_submit,
        op: Op::Cluster {
            nodes,
            tres: TresCounts::from([("cpu".to_string(), procs as f64)]),
        },
    };
    (first_submit, 0, event)
}

/// The groups, users and job numbers already converted (job -> its line).
#[derive(Default)]
struct Known {
    groups: BTreeSet<String>,
    users: BTreeSet<(String, String)>,
    jobs: BTreeMap<i64, u64>,
}

/// A job line's values that fit what the engines hold.
struct CheckedJob {
    /// Allocated (else requested) processors.
    cpus: i64,
    submit: Time,
    /// Start and end, unless the run time is unknown.
    run: Option<(Time, Time)>,
}

/// The CPUs, submit time and start/end times of the job on `line`, or its
/// rejection naming the field.
fn checked_job(
    base: Time,
    line: u64,
    v: &[i64; 18],
    known: &Known,
) -> Result<CheckedJob, Rejection> {
    let reject =
        |field: usize, reason: &str| Rejection::new(line, Some(FIELD_NAMES[field]), reason);
    if v[1] < 0 {
        return Err(reject(1, "a job needs a submit time"));
    }
    let cpus = if v[4] > 0 { v[4] } else { v[7] };
    if cpus <= 0 {
        return Err(reject(
            4,
            "neither allocated nor requested processors are known",
        ));
    }
    if cpus as f64 > MAX_TRES_COUNT {
        return Err(reject(4, &format!("{cpus} processors is out of range")));
    }
    if v[8] > 0 && v[8] as u64 > MAX_DURATION_SECS {
        return Err(reject(8, &format!("{} s is out of range", v[8])));
    }
    let Some((submit, start, end)) = job_times(base, v) else {
        return Err(reject(
            1,
            "the submit, start or end time falls outside 1970..9999 (UnixStartTime + \
             submit time + wait time + run time)",
        ));
    };
    if let Some(first) = known.jobs.get(&v[0]) {
        return Err(reject(
            0,
            &format!("job {} is already on line {first}", v[0]),
        ));
    }
    Ok(CheckedJob {
        cpus,
        submit,
        run: start.zip(end),
    })
}

/// The events of the job on `line` (its account's and user's creation the
/// first time each is seen, `submit`, then `start` and `end`, or `cancel`
/// at submit when its run time is unknown), or its rejection.
fn job_events(
    base: Time,
    line: u64,
    v: &[i64; 18],
    known: &mut Known,
) -> Result<Vec<TimedEvent>, Rejection> {
    let CheckedJob { cpus, submit, run } = checked_job(base, line, v, known)?;
    known.jobs.insert(v[0], line);
    let at = |t: Time, op: Op| (t, line, Event { t, op });
    let mut events = Vec::new();
    let (user, group) = (v[11], v[12]);
    let account = format!("g{}", group.max(0));
    let user = format!("u{}", user.max(0));
    if known.groups.insert(account.clone()) {
        events.push(at(
            submit,
            Op::Account {
                name: account.clone(),
                parent: None,
                shares: Some(Shares::Value(1)),
                priority: None,
            },
        ));
    }
    if known.users.insert((account.clone(), user.clone())) {
        events.push(at(
            submit,
            Op::User {
                user: user.clone(),
                account: account.clone(),
                shares: Some(Shares::Value(1)),
                priority: None,
            },
        ));
    }
    let job = format!("{}", v[0]);
    let spec = JobSpec {
        partition: (v[15] >= 0).then(|| format!("p{}", v[15])),
        tres: Some(TresCounts::from([("cpu".to_string(), cpus as f64)])),
        time_limit_secs: (v[8] > 0).then_some(v[8] as u64),
        ..JobSpec::default()
    };
    events.push(at(
        submit,
        Op::Submit {
            job: job.clone(),
            user,
            account,
            spec,
            submitted: None,
        },
    ));
    match run {
        None => events.push(at(submit, Op::Cancel { job })),
        Some((start, end)) => {
            let starting = Op::Start {
                job: job.clone(),
                tres: None,
            };
            events.push(at(start, starting));
            events.push(at(end, Op::End { job }));
        }
    }
    Ok(events)
}

/// A job's submit time and, unless its run time is unknown, its start and end
/// times; `None` if any falls outside the range of times.
#[allow(clippy::type_complexity)]
fn job_times(base: Time, v: &[i64; 18]) -> Option<(Time, Option<Time>, Option<Time>)> {
    let in_range = |t: Option<Time>| t.filter(|t| time_in_range(*t));
    let submit = in_range(base.checked_add(v[1]))?;
    if v[3] < 0 {
        return Some((submit, None, None));
    }
    let start = in_range(submit.checked_add(v[2].max(0)))?;
    let end = in_range(start.checked_add(v[3]))?;
    Some((submit, Some(start), Some(end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "; Version: 2.2\n; UnixStartTime: 1000\n; MaxNodes: 8\n; MaxProcs: 64\n\
        1 0 10 100 4 -1 -1 4 200 -1 1 3 7 -1 -1 2 -1 -1\n\
        2 5 -1 50 2 -1 -1 -1 -1 -1 1 3 7 -1 -1 -1 -1 -1\n\
        3 6 0 -1 1 -1 -1 -1 -1 -1 5 4 7 -1 -1 -1 -1 -1\n\
        4 x 0 1 1 -1 -1 -1 -1 -1 1 4 7 -1 -1 -1 -1 -1\n\
        5 7 0 1\n";

    #[test]
    fn jobs_become_submit_start_end_in_time_order() {
        let lines = convert_swf(TRACE.as_bytes()).unwrap();
        let rejected: Vec<_> = lines
            .iter()
            .filter_map(|l| l.event.as_ref().err())
            .collect();
        assert_eq!(rejected.len(), 2);
        assert_eq!(
            (rejected[0].line, rejected[0].field.as_deref()),
            (8, Some("submit time"))
        );
        assert_eq!(rejected[1].line, 9);
        let events: Vec<String> = lines
            .iter()
            .filter_map(|l| l.event.as_ref().ok())
            .map(|e| format!("{}:{}", e.t, crate::write::event_to_line(e)))
            .collect();
        let ops: Vec<(Time, &str)> = lines
            .iter()
            .filter_map(|l| l.event.as_ref().ok())
            .map(|e| (e.t, e.op.name()))
            .collect();
        // Job 1: submit 1000, start 1010, end 1110. Job 2: submit 1005, wait -1 -> start 1005,
        // end 1055. Job 3: unknown run time: cancelled at 1006.
        assert_eq!(
            ops,
            vec![
                (1000, "cluster"),
                (1000, "account"),
                (1000, "user"),
                (1000, "submit"),
                (1005, "submit"),
                (1005, "start"),
                (1006, "user"),
                (1006, "submit"),
                (1006, "cancel"),
                (1010, "start"),
                (1055, "end"),
                (1110, "end"),
            ],
            "{events:#?}"
        );
        let first_submit = lines
            .iter()
            .filter_map(|l| l.event.as_ref().ok())
            .find(|e| e.op.name() == "submit")
            .unwrap();
        match &first_submit.op {
            Op::Submit {
                job,
                user,
                account,
                spec,
                ..
            } => {
                assert_eq!(
                    (job.as_str(), user.as_str(), account.as_str()),
                    ("1", "u3", "g7")
                );
                assert_eq!(spec.partition.as_deref(), Some("p2"));
                assert_eq!(spec.time_limit_secs, Some(200));
                assert_eq!(spec.tres.as_ref().unwrap()["cpu"], 4.0);
            }
            other => panic!("not a submit: {other:?}"),
        }
    }
}
