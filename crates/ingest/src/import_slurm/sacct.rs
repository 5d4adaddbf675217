//! Usage history for `fairflow import slurm --sacct`: the jobs of `sacct -a
//! -X -P --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`
//! (with its header) as `submit`, `start` and `end` events at their own times
//! before the import's, so both engines charge each job's billable TRES (the
//! partition's `TRESBillingWeights` when defined, times its QOS's
//! `UsageFactor`, as for any job) while it ran and decay it to the import's
//! time, exactly.

use std::collections::BTreeMap;

use fairflow_model::event::{JobSpec, Op};
use fairflow_model::tres::TresCounts;
use fairflow_model::Time;

use super::text::CellError;
use super::{name_list, Associations, ImportError, Lines, Source};
use crate::slurm_time::parse_site_time;

/// The columns read, by their names in sacct's header.
const COLUMNS: [&str; 8] = [
    "JobID",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Start",
    "End",
    "AllocTRES",
];

/// A job's allocated TRES from `AllocTRES` (`billing=4,cpu=4,mem=16G,node=1,
/// gres/gpu=2`): `cpu`, `node`, `gres/*` as counts, `mem` in MiB (sacct's
/// `K`/`M`/`G`/`T` suffixes; no suffix is MiB); `billing` and the others are
/// not job sizes and are left out.
fn alloc_tres(text: &str) -> Result<TresCounts, CellError> {
    let mut tres = TresCounts::new();
    for item in text.split(',').filter(|i| !i.is_empty()) {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| CellError::NotTresItem(item.to_string()))?;
        let (digits, scale) = match key {
            "mem" => match value.chars().last() {
                Some('K') => (&value[..value.len() - 1], 1.0 / 1024.0),
                Some('M') => (&value[..value.len() - 1], 1.0),
                Some('G') => (&value[..value.len() - 1], 1024.0),
                Some('T') => (&value[..value.len() - 1], 1024.0 * 1024.0),
                _ => (value, 1.0),
            },
            "cpu" | "node" => (value, 1.0),
            k if k.starts_with("gres/") => (value, 1.0),
            _ => continue,
        };
        let count: f64 = digits
            .parse::<f64>()
            .ok()
            .filter(|c| c.is_finite() && *c >= 0.0)
            .ok_or_else(|| CellError::NotTresCount {
                item: item.to_string(),
                value: value.to_string(),
            })?;
        tres.insert(key.to_string(), count * scale);
    }
    Ok(tres)
}

/// The jobs' events with their times, in time order (a job's submit before
/// its start). A job that had not started by `t` is left out (squeue holds
/// the pending ones); one still running at `t` (no `End`, or a later one)
/// starts and does not end.
pub(super) fn read_sacct(
    source: Source<'_>,
    tree: &Associations,
    t: Time,
) -> Result<Vec<(Time, Op)>, ImportError> {
    let lines = Lines { source };
    let header = lines.header("sacct -P")?;
    let hint = format!(" (sacct -P --format={})", COLUMNS.join(","));
    let mut col = [0usize; COLUMNS.len()];
    for (slot, want) in col.iter_mut().zip(COLUMNS) {
        *slot = header.need(&lines, want, &hint)?;
    }
    let mut events: Vec<(Time, u64, Op)> = Vec::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for (line, text) in header.rows {
        let cells = lines.cells(line, text, header.names.len())?;
        let cell = |i: usize| cells[col[i]].trim();
        let time = |i: usize| {
            parse_site_time(cell(i))
                .map_err(|reason| lines.err(line, Some(COLUMNS[i]), reason.to_string()))
        };
        let Some(start) = time(5)?.filter(|s| *s < t) else {
            continue;
        };
        let end = time(6)?.filter(|e| *e <= t);
        if end.is_some_and(|e| e < start) {
            return Err(lines.err(line, Some("End"), "before the job's Start"));
        }
        let job = lines.name(line, "JobID", cell(0))?;
        let user = lines.name(line, "User", cell(1))?;
        let account = lines.name(line, "Account", cell(2))?;
        lines.check_job(line, tree, &mut seen, (&job, &user, &account))?;
        let tres = alloc_tres(cell(7)).map_err(|r| lines.err(line, Some("AllocTRES"), r))?;
        let partition = match cell(3) {
            "" => None,
            p => Some(name_list(&lines, line, "Partition", p)?),
        };
        let qos = match cell(4) {
            "" | "(null)" => None,
            q => Some(name_list(&lines, line, "QOS", q)?),
        };
        let spec = JobSpec {
            partition,
            qos,
            tres: Some(tres.clone()),
            ..JobSpec::default()
        };
        events.push((
            start,
            line * 3,
            Op::Submit {
                job: job.clone(),
                user,
                account,
                spec,
                submitted: None,
            },
        ));
        events.push((
            start,
            line * 3 + 1,
            Op::Start {
                job: job.clone(),
                tres: Some(tres),
            },
        ));
        if let Some(end) = end {
            events.push((end, line * 3 + 2, Op::End { job }));
        }
    }
    events.sort_by_key(|(time, order, _)| (*time, *order));
    Ok(events.into_iter().map(|(time, _, op)| (time, op)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_tres_reads_sacct_units() {
        let tres = alloc_tres("billing=8,cpu=4,energy=12,mem=16G,node=1,gres/gpu=2").unwrap();
        assert_eq!(tres.get("cpu"), Some(&4.0));
        assert_eq!(tres.get("node"), Some(&1.0));
        // 16 GiB is 16384 MiB.
        assert_eq!(tres.get("mem"), Some(&16384.0));
        assert_eq!(tres.get("gres/gpu"), Some(&2.0));
        assert_eq!(tres.get("billing"), None);
        assert_eq!(alloc_tres("mem=512M").unwrap().get("mem"), Some(&512.0));
        assert!(alloc_tres("cpu=four").is_err());
        assert!(alloc_tres("cpu").is_err());
    }
}
