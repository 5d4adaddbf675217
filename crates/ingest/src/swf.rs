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

// size: one pass over SWF's 18 fields and header comments; split pending (issue 38)
/// Convert an SWF trace into log lines: events (each carrying its SWF line
/// number) in time order, and rejections for malformed job lines.
pub fn convert_swf<R: BufRead>(reader: R) -> Result<Vec<LogLine>, std::io::Error> {
    let mut header = SwfHeader::default();
    let mut jobs: Vec<(u64, [i64; 18])> = Vec::new();
    let mut lines = Vec::new();
    for (index, text) in reader.lines().enumerate() {
        let line = index as u64 + 1;
        let text = match text {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                lines.push(LogLine {
                    line,
                    event: Err(Rejection::new(line, None, "not valid UTF-8")),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let text = text.trim();
        if let Some(comment) = text.strip_prefix(';') {
            if let Some((key, value)) = comment.split_once(':') {
                let value = value.trim();
                match key.trim() {
                    "UnixStartTime" => {
                        header.unix_start_time = value
                            .parse()
                            .ok()
                            .filter(|t| time_in_range(*t))
                            .unwrap_or(0)
                    }
                    // Sizes beyond what a TRES count holds are taken as unknown.
                    "MaxNodes" => header.max_nodes = parse_size(value),
                    "MaxProcs" => header.max_procs = parse_size(value),
                    _ => {}
                }
            }
            continue;
        }
        if text.is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 18 {
            lines.push(LogLine {
                line,
                event: Err(Rejection::new(
                    line,
                    None,
                    format!("an SWF job line has 18 fields, this has {}", fields.len()),
                )),
            });
            continue;
        }
        let mut values = [0i64; 18];
        let mut bad = None;
        for (i, field) in fields.iter().enumerate() {
            match field.parse::<f64>() {
                Ok(v) if v.is_finite() => values[i] = v as i64,
                _ => {
                    bad = Some(i);
                    break;
                }
            }
        }
        if let Some(i) = bad {
            lines.push(LogLine {
                line,
                event: Err(Rejection::new(
                    line,
                    Some(FIELD_NAMES[i]),
                    format!("`{}` is not a number", fields[i]),
                )),
            });
            continue;
        }
        jobs.push((line, values));
    }

    let base = header.unix_start_time;
    let mut events: Vec<(Time, u64, Event)> = Vec::new();
    // By submit time, then line: creations come before their first job.
    jobs.sort_by_key(|(line, v)| (v[1], *line));
    let first_submit = jobs
        .iter()
        .filter_map(|(_, v)| base.checked_add(v[1].max(0)).filter(|t| time_in_range(*t)))
        .min()
        .unwrap_or(base);
    let procs = header.max_procs.or(header.max_nodes).unwrap_or(1);
    let nodes = header.max_nodes.unwrap_or(procs);
    events.push((
        first_submit,
        0,
        Event {
            t: first_submit,
            op: Op::Cluster {
                nodes,
                tres: TresCounts::from([("cpu".to_string(), procs as f64)]),
            },
        },
    ));
    let mut known_groups = BTreeSet::new();
    let mut known_users = BTreeSet::new();
    let mut known_jobs: BTreeMap<i64, u64> = BTreeMap::new();
    for (line, v) in jobs {
        let reject = |field: usize, reason: &str| LogLine {
            line,
            event: Err(Rejection::new(
                line,
                Some(FIELD_NAMES[field]),
                reason.to_string(),
            )),
        };
        if v[1] < 0 {
            lines.push(reject(1, "a job needs a submit time"));
            continue;
        }
        let cpus = if v[4] > 0 { v[4] } else { v[7] };
        if cpus <= 0 {
            lines.push(reject(
                4,
                "neither allocated nor requested processors are known",
            ));
            continue;
        }
        if cpus as f64 > MAX_TRES_COUNT {
            lines.push(reject(4, &format!("{cpus} processors is out of range")));
            continue;
        }
        if v[8] > 0 && v[8] as u64 > MAX_DURATION_SECS {
            lines.push(reject(8, &format!("{} s is out of range", v[8])));
            continue;
        }
        let Some((submit, start, end)) = job_times(base, &v) else {
            lines.push(reject(
                1,
                "the submit, start or end time falls outside 1970..9999 (UnixStartTime + \
                 submit time + wait time + run time)",
            ));
            continue;
        };
        if let Some(first) = known_jobs.get(&v[0]) {
            lines.push(reject(
                0,
                &format!("job {} is already on line {first}", v[0]),
            ));
            continue;
        }
        known_jobs.insert(v[0], line);
        let (user, group) = (v[11], v[12]);
        let account = format!("g{}", group.max(0));
        let user = format!("u{}", user.max(0));
        if known_groups.insert(account.clone()) {
            events.push((
                submit,
                line,
                Event {
                    t: submit,
                    op: Op::Account {
                        name: account.clone(),
                        parent: None,
                        shares: Some(Shares::Value(1)),
                        priority: None,
                    },
                },
            ));
        }
        if known_users.insert((account.clone(), user.clone())) {
            events.push((
                submit,
                line,
                Event {
                    t: submit,
                    op: Op::User {
                        user: user.clone(),
                        account: account.clone(),
                        shares: Some(Shares::Value(1)),
                        priority: None,
                    },
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
        events.push((
            submit,
            line,
            Event {
                t: submit,
                op: Op::Submit {
                    job: job.clone(),
                    user,
                    account,
                    spec,
                    submitted: None,
                },
            },
        ));
        let Some((start, end)) = start.zip(end) else {
            events.push((
                submit,
                line,
                Event {
                    t: submit,
                    op: Op::Cancel { job },
                },
            ));
            continue;
        };
        events.push((
            start,
            line,
            Event {
                t: start,
                op: Op::Start {
                    job: job.clone(),
                    tres: None,
                },
            },
        ));
        events.push((
            end,
            line,
            Event {
                t: end,
                op: Op::End { job },
            },
        ));
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

/// A header size, if it is a count a TRES can hold.
fn parse_size(value: &str) -> Option<u64> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| *n as f64 <= MAX_TRES_COUNT)
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
