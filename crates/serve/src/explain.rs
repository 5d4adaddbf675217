//! `fairflow explain JOB`: why a job has its priority. Readable text by
//! default, `--json` for tools. Both give the model and the fair-share
//! algorithm, every factor with its value (normalized for Slurm and Flux,
//! raw for Moab), weight, contribution (and Moab's caps, subcomponents under
//! their component), the priority and how the model turns the sum into it,
//! and the fair-share path from `root` to the job's user association (the
//! sshare rows of each level: shares, usage and value), given as input. A
//! job submitted to several partitions or QOS also shows every (partition,
//! QOS) pair's priority with its partition, QOS and TRES contributions (JSON:
//! `pairs`).

use fairflow_model::report::{FairshareRow, JobPriority};
use fairflow_model::{Algorithm, PriorityModel, Sluid};
use serde_json::{json, Value};

use crate::format::{aligned, json_f64, opt_fixed6};
use crate::sprio::job_json_keyed;
use crate::sshare::BASE_COLUMNS;

/// How the model turns the sum of contributions into the integer priority.
fn rule(model: PriorityModel) -> &'static str {
    match model {
        PriorityModel::Slurm => {
            "sum of contributions (site - nice included), truncated toward zero; \
             below 1 is 1, above 4294967295 is 4294967295; a held job is 0"
        }
        PriorityModel::Flux => {
            "sum of contributions rounded half away from zero; below 0 is 0, above \
             4294967295 is 4294967295; urgency 0 (held) is 0, urgency 31 is 4294967295"
        }
        PriorityModel::Moab => {
            "sum of component contributions (each the component weight times its capped \
             sum of capped, weighted subcomponents), truncated, within 0..1000000000; \
             a held job is 0"
        }
    }
}

/// The sum of the contributions that make up the priority (Moab: the
/// components only; their subcomponents are inside them).
fn contribution_sum(job: &JobPriority) -> f64 {
    let mut sum = 0.0;
    for factor in &job.factors {
        if factor.component.is_none() {
            sum += factor.weighted;
        }
    }
    sum
}

fn path_cells(row: &FairshareRow) -> Vec<String> {
    vec![
        format!("{}{}", " ".repeat(row.depth), row.account),
        row.user.clone().unwrap_or_default(),
        row.raw_shares.map(|s| s.to_string()).unwrap_or_default(),
        opt_fixed6(row.norm_shares),
        row.raw_usage.to_string(),
        opt_fixed6(row.norm_usage),
        opt_fixed6(row.effective_usage),
        opt_fixed6(row.fairshare),
        opt_fixed6(row.level_fs),
    ]
}

/// The readable explanation.
pub fn render_text(job: &JobPriority, algorithm: Algorithm, path: &[FairshareRow]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Job {} (user {}, account {}, partition {}, QOS {}): {}, submitted at {}\n",
        job.job,
        job.user,
        job.account,
        if job.partition.is_empty() {
            "-"
        } else {
            &job.partition
        },
        if job.qos.is_empty() { "-" } else { &job.qos },
        job.state.name(),
        job.submit_at,
    ));
    out.push_str(&format!(
        "Model: {}    Fair-share algorithm: {}\n",
        job.model.name(),
        algorithm.name()
    ));
    out.push_str(&format!("Priority: {}\n\n", job.priority));
    out.push_str(&format!(
        "  {:<24} {:>16} {:>14} {:>18} {:>12}\n",
        "factor", "value", "weight", "contribution", "cap"
    ));
    for factor in &job.factors {
        let name = match &factor.component {
            Some(_) => format!("  {}", factor.name),
            None => factor.name.to_string(),
        };
        let cap = factor.cap.map(|c| format!("{c}")).unwrap_or_default();
        let line = format!(
            "  {name:<24} {:>16.7} {:>14} {:>18.4} {cap:>12}",
            factor.normalized,
            factor.weight,
            factor.weighted + 0.0,
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "  {:<24} {:>16} {:>14} {:>18.4}\n",
        "sum",
        "",
        "",
        contribution_sum(job) + 0.0
    ));
    out.push_str(&format!("Rule: {}.\n", rule(job.model)));
    if !job.pairs.is_empty() {
        out.push_str(&pairs_text(job));
    }
    out.push_str("\nFair-share path from root:\n");
    if path.is_empty() {
        out.push_str("(not available)\n");
    } else {
        let rows: Vec<Vec<String>> = path.iter().map(path_cells).collect();
        out.push_str(&aligned(&BASE_COLUMNS, &rows));
    }
    out
}

/// A job's (partition, QOS) pairs, one line each in Slurm's order, with
/// the factors that differ between pairs.
fn pairs_text(job: &JobPriority) -> String {
    let mut out = String::from(
        "\n(Partition, QOS) pairs, in Slurm's order (the first is the job's own; \
         a pair sums its terms as Slurm's priority_array does):\n",
    );
    out.push_str(&format!(
        "  {:<16} {:<12} {:>10} {:>14} {:>14}  {}\n",
        "partition", "qos", "priority", "partition", "qos", "tres"
    ));
    for pair in &job.pairs {
        let weighted = |name: &str| {
            pair.factors
                .iter()
                .find(|f| f.name == name)
                .map_or(0.0, |f| f.weighted)
                + 0.0
        };
        let tres: Vec<String> = pair
            .factors
            .iter()
            .filter_map(|f| {
                f.name
                    .strip_prefix("tres/")
                    .map(|name| format!("{name}={:.4}", f.weighted + 0.0))
            })
            .collect();
        let line = format!(
            "  {:<16} {:<12} {:>10} {:>14.4} {:>14.4}  {}",
            pair.partition,
            if pair.qos.is_empty() { "-" } else { &pair.qos },
            pair.priority,
            weighted("partition"),
            weighted("qos"),
            tres.join(",")
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn path_json(row: &FairshareRow) -> Value {
    json!({
        "account": row.account,
        "user": row.user,
        "depth": row.depth,
        "raw_shares": row.raw_shares.map(|s| s.to_string()),
        "norm_shares": json_f64(row.norm_shares),
        "raw_usage": row.raw_usage,
        "norm_usage": json_f64(row.norm_usage),
        "effective_usage": json_f64(row.effective_usage),
        "fairshare": json_f64(row.fairshare),
        "level_fs": json_f64(row.level_fs),
    })
}

/// The explanation as one JSON object: the job's sprio object (with every
/// factor's `normalized` value, `weight` and `weighted` contribution) plus
/// `algorithm`, `sum`, `rule` and `fairshare_path`, and the job's `sluid`
/// when it has one.
pub fn render_json(
    job: &JobPriority,
    algorithm: Algorithm,
    path: &[FairshareRow],
    sluid: Option<Sluid>,
) -> String {
    let mut object = job_json_keyed(job, sluid);
    if let Value::Object(map) = &mut object {
        map.insert("algorithm".into(), json!(algorithm.name()));
        map.insert("sum".into(), json_f64(Some(contribution_sum(job))));
        map.insert("rule".into(), json!(rule(job.model)));
        map.insert(
            "fairshare_path".into(),
            Value::Array(path.iter().map(path_json).collect()),
        );
    }
    let mut text = serde_json::to_string_pretty(&object).expect("plain values always serialize");
    text.push('\n');
    text
}
