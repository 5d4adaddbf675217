//! `fairflow top`: the first `k` entries of the scheduler's queue (under
//! Slurm one per (partition, QOS) pair of each pending job, expedited jobs
//! first, then by partition `PriorityTier`, priority, submit time and job
//! id: `fairflow_model::report::entries`), in three forms (aligned table,
//! `-P` parsable, `--json`). Columns:
//! `RANK|JOBID|USER|ACCOUNT|PRIORITY|PARTITION|QOS`, the last two the
//! entry's pair; ranks count from 1. The queue comes already ordered (the
//! engine ranks it). In JSON each entry has `partition` and `qos`,
//! `priority_tier` when not 0 and `expedited` when true; a job submitted to
//! several partitions or QOS also carries `pairs`: each (partition, QOS)
//! pair's `partition`, `qos` and `priority`, in Slurm's order.

use fairflow_model::report::{JobPriority, SharedJobs};
use serde_json::json;

use crate::format::{Column, Justify};
use crate::pieces::{aligned_pieces, parsable_pieces, pretty_array, Pieces};
use crate::sprio::pairs_json;
use crate::OutputFormat;

/// The columns, in order.
pub const COLUMNS: [Column; 7] = [
    Column {
        name: "RANK",
        width: 6,
        justify: Justify::Right,
    },
    Column {
        name: "JOBID",
        width: 15,
        justify: Justify::Right,
    },
    Column {
        name: "USER",
        width: 8,
        justify: Justify::Right,
    },
    Column {
        name: "ACCOUNT",
        width: 8,
        justify: Justify::Right,
    },
    Column {
        name: "PRIORITY",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "PARTITION",
        width: 9,
        justify: Justify::Right,
    },
    Column {
        name: "QOS",
        width: 8,
        justify: Justify::Right,
    },
];

/// The first `k` jobs of `queue` (already in queue order) in `format`.
pub fn render(queue: &[JobPriority], k: usize, format: OutputFormat) -> String {
    render_page(queue, 0, k, format)
}

/// A page of the queue: `page` holds the jobs from the one at `offset` (0:
/// the first), in queue order; the first `k` are written, ranked from
/// `offset + 1`.
pub fn render_page(page: &[JobPriority], offset: usize, k: usize, format: OutputFormat) -> String {
    let first: Vec<JobPriority> = page.iter().take(k).cloned().collect();
    render_page_pieces(SharedJobs::new(first.into()), offset, k, format).collect()
}

/// [`render_page`] in pieces (`crate::pieces`), each row rendered as its
/// piece is taken.
pub fn render_page_pieces(
    page: SharedJobs,
    offset: usize,
    k: usize,
    format: OutputFormat,
) -> Pieces {
    let page = page.prefix(k);
    let count = page.len();
    match format {
        OutputFormat::Json | OutputFormat::SlurmJson => pretty_array(count, move |i| {
            let job = &page[i];
            let mut row = json!({
                "rank": offset + i + 1,
                "job_id": job.job,
                "user": job.user,
                "account": job.account,
                "priority": job.priority,
                "partition": job.partition,
                "qos": job.qos,
            });
            if job.priority_tier != 0 {
                row["priority_tier"] = json!(job.priority_tier);
            }
            if job.expedited {
                row["expedited"] = json!(true);
            }
            if !job.pairs.is_empty() {
                row["pairs"] = pairs_json(job, false);
            }
            row
        }),
        OutputFormat::Parsable => {
            parsable_pieces(&COLUMNS, count, move |i| cells(&page[i], offset + i))
        }
        OutputFormat::Table => aligned_pieces(COLUMNS.to_vec(), count, move |i| {
            cells(&page[i], offset + i)
        }),
    }
}

/// The cells of `job`, ranked `index + 1`.
fn cells(job: &JobPriority, index: usize) -> Vec<String> {
    vec![
        (index + 1).to_string(),
        job.job.clone(),
        job.user.clone(),
        job.account.clone(),
        job.priority.to_string(),
        job.partition.clone(),
        job.qos.clone(),
    ]
}
