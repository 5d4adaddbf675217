//! `squeue`'s pending jobs: one `submit` per job (in submit-time order),
//! after the partitions and QOS their lists name. Slurm 26.05's SLUID, when a
//! row has an eleventh cell, becomes the job's `sluid`.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::event::{is_list, JobSpec, Op};
use fairflow_model::time::parse_slurm_duration_secs;
use fairflow_model::tres::TresCounts;
use fairflow_model::{Sluid, Time};

use super::assoc::Associations;
use super::text::{CellError, Lines};
use super::{ImportError, Source};
use crate::slurm_time::parse_site_time;

pub(super) const SQUEUE_FIELDS: [&str; 11] = [
    "JobID",
    "User",
    "Account",
    "Partition",
    "QOS",
    "SubmitTime",
    "CPUs",
    "Nodes",
    "TimeLimit",
    "EligibleTime",
    "Sluid",
];

/// The cells every row has (the eligible time and the SLUID are optional).
const REQUIRED_FIELDS: usize = 9;

/// A partition or QOS cell: one name or a comma-separated list of names
/// (each checked, none empty), kept as written.
pub(super) fn name_list(
    lines: &Lines,
    line: u64,
    field: &str,
    text: &str,
) -> Result<String, ImportError> {
    for name in text.split(',') {
        lines.name(line, field, name)?;
    }
    Ok(text.to_string())
}

/// A time limit as squeue prints it: Slurm's duration (`30:00`,
/// `1:00:00`, `2-00:00:00`), or none (`UNLIMITED`, `NOT_SET`, ...).
pub(crate) fn time_limit_secs(text: &str) -> Result<Option<u64>, CellError> {
    match text.to_ascii_uppercase().as_str() {
        "UNLIMITED" | "INFINITE" | "NOT_SET" | "N/A" | "" => Ok(None),
        _ => parse_slurm_duration_secs(text)
            .map(|secs| Some(secs.unsigned_abs()))
            .map_err(|e| CellError::NotDuration(e.reason)),
    }
}

/// `submit` operations from `squeue`, in submit-time order (stable), after
/// a `partition` / `qos` event for each name of a partition or QOS list.
pub(super) fn read_queue(
    source: Source<'_>,
    tree: &Associations,
    t: Time,
) -> Result<Vec<Op>, ImportError> {
    let lines = Lines { source };
    let mut jobs: Vec<(Time, Op)> = Vec::new();
    let mut listed_partitions: BTreeSet<String> = BTreeSet::new();
    let mut listed_qos: BTreeSet<String> = BTreeSet::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut sluids: BTreeMap<Sluid, u64> = BTreeMap::new();
    for (line, text) in lines.rows() {
        let f = lines.fields_from(line, text, &SQUEUE_FIELDS, REQUIRED_FIELDS)?;
        let job = lines.name(line, "JobID", f[0])?;
        let user = lines.name(line, "User", f[1])?;
        let account = lines.name(line, "Account", f[2])?;
        lines.check_job(line, tree, &mut seen, (&job, &user, &account))?;
        let partition = match f[3] {
            "" => None,
            p => Some(name_list(&lines, line, "Partition", p)?),
        };
        let qos = match f[4] {
            "" | "(null)" => None,
            q => Some(name_list(&lines, line, "QOS", q)?),
        };
        for (list, names) in [
            (&partition, &mut listed_partitions),
            (&qos, &mut listed_qos),
        ] {
            if let Some(list) = list.as_deref().filter(|l| is_list(l)) {
                names.extend(list.split(',').map(str::to_string));
            }
        }
        let (submitted, mut spec) = job_spec(&lines, line, &f, t, (partition, qos))?;
        spec.sluid = job_sluid(&lines, line, f.get(10).copied(), &mut sluids)?;
        jobs.push((
            submitted,
            Op::Submit {
                job,
                user,
                account,
                spec,
                submitted: Some(submitted),
            },
        ));
    }
    jobs.sort_by_key(|(submitted, _)| *submitted);
    let mut ops: Vec<Op> = listed_partitions
        .into_iter()
        .map(|name| Op::Partition {
            name,
            priority_job_factor: None,
            tres_billing_weights: None,
            priority: None,
            tres: None,
            max_time_secs: None,
            priority_tier: None,
        })
        .collect();
    ops.extend(listed_qos.into_iter().map(|name| Op::Qos {
        name,
        priority: None,
        usage_factor: None,
    }));
    ops.extend(jobs.into_iter().map(|(_, op)| op));
    Ok(ops)
}

/// A row's SLUID cell (`None`: no cell, empty, or `s0000000000000`); a
/// SLUID an earlier row (in `sluids`) gave is an error naming both lines.
fn job_sluid(
    lines: &Lines<'_>,
    line: u64,
    cell: Option<&str>,
    sluids: &mut BTreeMap<Sluid, u64>,
) -> Result<Option<Sluid>, ImportError> {
    let err = |reason: String| lines.err(line, Some("Sluid"), reason);
    let Some(sluid) = Sluid::parse_printed(cell.unwrap_or(""))
        .map_err(|e| err(format!("`{}`: {e}", cell.unwrap_or(""))))?
    else {
        return Ok(None);
    };
    if let Some(first) = sluids.insert(sluid, line) {
        return Err(err(format!("SLUID {sluid} is line {first}'s job's too")));
    }
    Ok(Some(sluid))
}

/// A pending job's submit time and its spec from its squeue fields `f` (on
/// `line`): its partition and QOS `lists`, CPUs, nodes, time limit and
/// eligible time (Slurm's `Unknown`: `t`).
fn job_spec(
    lines: &Lines<'_>,
    line: u64,
    f: &[&str],
    t: Time,
    lists: (Option<String>, Option<String>),
) -> Result<(Time, JobSpec), ImportError> {
    let submitted = parse_site_time(f[5])
        .map_err(|reason| lines.err(line, Some("SubmitTime"), reason.to_string()))?
        .ok_or_else(|| lines.err(line, Some("SubmitTime"), "a pending job has a submit time"))?;
    if submitted > t {
        return Err(lines.err(
            line,
            Some("SubmitTime"),
            format!("`{}` is after the import's time {t} (--time)", f[5]),
        ));
    }
    // Slurm's eligible time is its begin time; before the job is
    // eligible (a dependency, a hold) squeue prints `Unknown`, and
    // Slurm's age is 0: the job's age starts at `t`.
    let begin = match f.get(9) {
        None => None,
        Some(text) => Some(
            parse_site_time(text)
                .map_err(|reason| lines.err(line, Some("EligibleTime"), reason.to_string()))?
                .unwrap_or(t),
        ),
    };
    let count = |field: &str, text: &str| -> Result<u64, ImportError> {
        text.parse::<u64>().map_err(|_| {
            lines.err(
                line,
                Some(field),
                format!("`{text}` is not an integer >= 0"),
            )
        })
    };
    let cpus = count("CPUs", f[6])?;
    let nodes = count("Nodes", f[7])?;
    let time_limit_secs =
        time_limit_secs(f[8]).map_err(|reason| lines.err(line, Some("TimeLimit"), reason))?;
    let mut tres = TresCounts::new();
    tres.insert("cpu".to_string(), cpus as f64);
    tres.insert("node".to_string(), nodes as f64);
    let spec = JobSpec {
        partition: lists.0,
        qos: lists.1,
        tres: Some(tres),
        time_limit_secs,
        begin,
        ..JobSpec::default()
    };
    Ok((submitted, spec))
}
