//! `fairflow sprio`: each listed job's priority and factors
//! ([`JobPriority`]), as Slurm's `sprio -l` shows them, in three forms
//! (aligned table, `-P` parsable, `--json`), weighted by default or
//! normalized with `-n`.
//!
//! Columns, in this order: `JOBID|PARTITION|USER|ACCOUNT|PRIORITY|SITE|AGE|
//! ASSOC|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES`, then the model's own.
//! - Weighted cells print as `%.0f`; normalized (`-n`) cells as `%.7f`.
//!   `PRIORITY` is always the model's integer priority; `SITE` and `NICE`
//!   are the job's site factor and nice value (integers) in both forms, as
//!   sprio prints them.
//! - `TRES`: `name=value` for each TRES factor whose value is not 0,
//!   comma-joined; `%.0f` weighted, `%.2f` normalized (as sprio).
//! - Slurm fills every column. Flux: `AGE` is the wait-time factor, `ASSOC`
//!   the bank, `FAIRSHARE` the fair-share, `JOBSIZE` the job size,
//!   `PARTITION` the queue, `QOS` the QOS; `SITE`, `NICE` and `TRES` are
//!   empty; extra columns `URGENCY` and `USERFACTOR`. Moab: `AGE` is the
//!   QUEUETIME subcomponent, `ASSOC` the CRED ACCOUNT subcomponent,
//!   `FAIRSHARE` the FS component, `JOBSIZE` the RES component, `PARTITION`
//!   and `QOS` the CRED CLASS and QOS subcomponents (a subcomponent's
//!   weighted value is its capped contribution to its component, before the
//!   component's weight); `SITE`, `NICE`, `TRES` are empty; extra columns,
//!   one per component (`CRED`, `FS`, `RES`, `SERV`, `TARGET`, `USAGE`,
//!   `ATTR`), each the component's contribution (weighted) or its capped sum
//!   (normalized).
//! - Rows: every job the model evaluated except held ones (pending jobs, and
//!   running ones where the model lists them), in job-id order (numeric ids
//!   as numbers first). A job submitted to several partitions or several QOS
//!   (Slurm) has one row per (partition, QOS) pair, as Slurm 24.11's sprio
//!   lists them (`_create_prio_list_part`/`_create_prio_list_qos`): in the
//!   pairs' order (partitions as listed, each with its QOS by priority),
//!   each with the pair's partition, priority (the pair's entry of Slurm's
//!   `priority_array`), `PARTITION`, `QOS` and `TRES` factors; the other
//!   cells are the job's.
//! - `--json`: an array of objects with the cells (`job_id`, `partition`,
//!   `user`, `account`, `priority`, `state`, `model`) and `factors`, every
//!   factor with its `normalized` value, `weight`, `weighted` value
//!   (`component` and `cap` for Moab).

use std::sync::Arc;

use fairflow_model::report::{JobIdKey, JobPriority, PriorityFactor};
use fairflow_model::PriorityModel;
use serde_json::{json, Value};

use crate::format::{column, json_f64, Column, Justify};
use crate::pieces::{aligned_pieces, parsable_pieces, pretty_array, Pieces};
use crate::OutputFormat;

/// The columns every model shows, with sprio's `-l` widths.
const BASE_COLUMNS: [Column; 14] = [
    column("JOBID", 15, Justify::Right),
    column("PARTITION", 9, Justify::Left),
    column("USER", 8, Justify::Right),
    column("ACCOUNT", 8, Justify::Right),
    column("PRIORITY", 10, Justify::Right),
    column("SITE", 10, Justify::Right),
    column("AGE", 10, Justify::Right),
    column("ASSOC", 10, Justify::Right),
    column("FAIRSHARE", 10, Justify::Right),
    column("JOBSIZE", 10, Justify::Right),
    column("PARTITION", 10, Justify::Right),
    column("QOS", 10, Justify::Right),
    column("NICE", 11, Justify::Right),
    column("TRES", 20, Justify::Right),
];

/// What fills a factor column under a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    /// A factor, by name.
    Factor(&'static str),
    /// The raw value of a factor, as an integer in both forms (site, nice).
    Integer(&'static str),
    /// The TRES factors, `name=value` joined.
    Tres,
    /// Not part of the model: an empty cell.
    Empty,
}

/// For `SITE|AGE|ASSOC|FAIRSHARE|JOBSIZE|PARTITION|QOS|NICE|TRES`, what
/// each column shows under `model`.
fn factor_cells(model: PriorityModel) -> [Cell; 9] {
    use Cell::{Empty, Factor, Integer, Tres};
    match model {
        PriorityModel::Slurm => [
            Integer("site"),
            Factor("age"),
            Factor("assoc"),
            Factor("fairshare"),
            Factor("jobsize"),
            Factor("partition"),
            Factor("qos"),
            Integer("nice"),
            Tres,
        ],
        PriorityModel::Flux => [
            Empty,
            Factor("wait_time"),
            Factor("bank"),
            Factor("fairshare"),
            Factor("jobsize"),
            Factor("queue"),
            Factor("qos"),
            Empty,
            Empty,
        ],
        PriorityModel::Moab => [
            Empty,
            Factor("QUEUETIME"),
            Factor("ACCOUNT"),
            Factor("FS"),
            Factor("RES"),
            Factor("CLASS"),
            Factor("QOS"),
            Empty,
            Empty,
        ],
    }
}

/// The model's own columns, appended after `TRES`: `(header, factor)`.
fn extra_columns(model: PriorityModel) -> &'static [(&'static str, &'static str)] {
    match model {
        PriorityModel::Slurm => &[],
        PriorityModel::Flux => &[("URGENCY", "urgency"), ("USERFACTOR", "user")],
        PriorityModel::Moab => &[
            ("CRED", "CRED"),
            ("FS", "FS"),
            ("RES", "RES"),
            ("SERV", "SERV"),
            ("TARGET", "TARGET"),
            ("USAGE", "USAGE"),
            ("ATTR", "ATTR"),
        ],
    }
}

/// The columns under `model`, in order.
pub fn columns(model: PriorityModel) -> Vec<Column> {
    let mut columns = BASE_COLUMNS.to_vec();
    columns.extend(
        extra_columns(model)
            .iter()
            .map(|(header, _)| column(header, 10, Justify::Right)),
    );
    columns
}

/// `%.0f` or `%.7f`, without a negative zero.
fn number(value: f64, normalized: bool) -> String {
    // Adding 0.0 turns -0.0 into 0.0, so no cell reads "-0".
    let value = value + 0.0;
    if normalized {
        format!("{value:.7}")
    } else {
        format!("{value:.0}")
    }
}

fn find<'a>(job: &'a JobPriority, name: &str) -> Option<&'a PriorityFactor> {
    job.factor(name)
}

fn factor_cell(job: &JobPriority, name: &str, normalized: bool) -> String {
    match find(job, name) {
        Some(f) if normalized => number(f.normalized, true),
        Some(f) => number(f.weighted, false),
        None => String::new(),
    }
}

fn tres_cell(job: &JobPriority, normalized: bool) -> String {
    job.factors
        .iter()
        .filter_map(|f| f.name.strip_prefix("tres/").map(|name| (name, f)))
        .filter_map(|(name, f)| {
            let value = if normalized { f.normalized } else { f.weighted } + 0.0;
            (value != 0.0).then(|| {
                if normalized {
                    format!("{name}={value:.2}")
                } else {
                    format!("{name}={value:.0}")
                }
            })
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A job's cells, in [`columns`] order.
pub fn cells(job: &JobPriority, normalized: bool) -> Vec<String> {
    let mut cells = vec![
        job.job.clone(),
        job.partition.clone(),
        job.user.clone(),
        job.account.clone(),
        job.priority.to_string(),
    ];
    for cell in factor_cells(job.model) {
        cells.push(match cell {
            Cell::Factor(name) => factor_cell(job, name, normalized),
            Cell::Integer(name) => find(job, name)
                .map(|f| number(f.normalized, false))
                .unwrap_or_default(),
            Cell::Tres => tres_cell(job, normalized),
            Cell::Empty => String::new(),
        });
    }
    for (_, name) in extra_columns(job.model) {
        cells.push(factor_cell(job, name, normalized));
    }
    cells
}

/// The jobs sprio lists, in job-id order: every evaluated job but held ones.
pub fn listed(jobs: &[JobPriority]) -> Vec<&JobPriority> {
    listed_indices(jobs).into_iter().map(|i| &jobs[i]).collect()
}

/// The indices in `jobs` of [`listed`]'s jobs, in its order.
fn listed_indices(jobs: &[JobPriority]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).filter(|&i| !jobs[i].held()).collect();
    order.sort_by_cached_key(|&i| JobIdKey::new(&jobs[i].job));
    order
}

/// A factor list as JSON objects.
fn factors_json(factors: &[PriorityFactor]) -> Vec<Value> {
    factors
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "component": f.component,
                "normalized": json_f64(Some(f.normalized)),
                "weight": json_f64(Some(f.weight)),
                "weighted": json_f64(Some(f.weighted)),
                "cap": json_f64(f.cap),
            })
        })
        .collect()
}

/// One job as its JSON object; a job with several (partition, QOS) pairs
/// also carries `pairs`, each `{partition, qos, priority, factors}` in
/// Slurm's order.
pub fn job_json(job: &JobPriority) -> Value {
    let factors = factors_json(&job.factors);
    let mut object = json!({
        "job_id": job.job,
        "partition": job.partition,
        "user": job.user,
        "account": job.account,
        "qos": job.qos,
        "priority": job.priority,
        "state": job.state.name(),
        "model": job.model.name(),
        "submit_at": job.submit_at,
        "factors": factors,
    });
    if !job.pairs.is_empty() {
        object["pairs"] = pairs_json(job, true);
    }
    object
}

/// [`job_json`] with the job's `sluid` (Slurm 26.05), when it has one.
pub fn job_json_keyed(job: &JobPriority, sluid: Option<fairflow_model::Sluid>) -> Value {
    let mut object = job_json(job);
    if let Some(sluid) = sluid {
        object["sluid"] = Value::String(sluid.to_string());
    }
    object
}

/// A job's (partition, QOS) pairs, each `{partition, qos, priority}`, with
/// its `factors` when `with_factors`.
pub(crate) fn pairs_json(job: &JobPriority, with_factors: bool) -> Value {
    job.pairs
        .iter()
        .map(|pair| {
            let mut object = json!({
                "partition": pair.partition,
                "qos": pair.qos,
                "priority": pair.priority,
            });
            if with_factors {
                object["factors"] = Value::Array(factors_json(&pair.factors));
            }
            object
        })
        .collect()
}

/// The listed jobs in `format`, one row per (partition, QOS) pair
/// ([`JobPriority::pair_rows`]); `normalized` is `-n`.
pub fn render(jobs: &[JobPriority], normalized: bool, format: OutputFormat) -> String {
    render_pieces(Arc::new(SprioRows::new(jobs)), normalized, format).collect()
}

/// [`render`] in pieces of a few hundred rows (`pieces`), rendered as they
/// are taken: what a server sends while it renders.
pub fn render_pieces(rows: Arc<SprioRows>, normalized: bool, format: OutputFormat) -> Pieces {
    let count = rows.len();
    let model = rows
        .iter()
        .next()
        .map_or(PriorityModel::Slurm, |row| row.model);
    let columns = columns(model);
    match format {
        OutputFormat::Json | OutputFormat::SlurmJson => {
            pretty_array(count, move |i| job_json(&rows.row(i)))
        }
        OutputFormat::Parsable => {
            parsable_pieces(&columns, count, move |i| cells(&rows.row(i), normalized))
        }
        OutputFormat::Table => {
            aligned_pieces(columns, count, move |i| cells(&rows.row(i), normalized))
        }
    }
}

mod rows;
pub mod slurm_format;

pub use rows::SprioRows;

#[cfg(test)]
mod tests;
