//! `fairflow position JOB` and `GET /v1/jobs/{id}/position`: a job's place in
//! line. Readable text by default, JSON for tools. Both give the job's rank
//! in the whole queue (its first entry's, under Slurm one entry per
//! (partition, QOS) pair) and its other entries, its rank in each of its
//! partitions, the jobs of each
//! account ahead of it (most first), and what it lacks to pass the job just
//! ahead: the priority points, and per factor both values, the weighted gap
//! and the value that factor alone would need.

use fairflow_model::report::position::Position;
use serde_json::{json, Value};

use crate::format::{aligned, fixed6, json_f64, opt_fixed6, Column, Justify};
use crate::sprio::job_json_keyed;

const ACCOUNT_COLUMNS: [Column; 2] = [
    Column {
        name: "ACCOUNT",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "JOBS_AHEAD",
        width: 10,
        justify: Justify::Right,
    },
];

const GAP_COLUMNS: [Column; 5] = [
    Column {
        name: "FACTOR",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "OWN",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "AHEAD",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "WEIGHTED_GAP",
        width: 12,
        justify: Justify::Right,
    },
    Column {
        name: "NEEDED_ALONE",
        width: 12,
        justify: Justify::Right,
    },
];

/// The accounts with jobs ahead, most jobs first (then by name).
fn accounts_by_count(position: &Position) -> Vec<(&String, u64)> {
    let mut accounts: Vec<(&String, u64)> = position
        .ahead_by_account
        .iter()
        .map(|(account, n)| (account, *n))
        .collect();
    accounts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    accounts
}

/// The place as readable text.
pub fn render_text(position: &Position) -> String {
    let job = &position.job;
    let mut out = format!(
        "job {} (user {}, account {}): priority {}, rank {} in the queue\n",
        job.job, job.user, job.account, job.priority, position.rank
    );
    if !job.pairs.is_empty() {
        out.push_str(&format!(
            "  first entry: partition {}, QOS {}\n",
            job.partition, job.qos
        ));
    }
    for entry in &position.entries {
        out.push_str(&format!(
            "  entry: partition {}, QOS {}: rank {} (priority {})\n",
            entry.partition, entry.qos, entry.rank, entry.priority
        ));
    }
    for place in &position.partitions {
        out.push_str(&format!(
            "  partition {}: rank {} (priority {} there)\n",
            place.partition, place.rank, place.priority
        ));
    }
    if position.ahead_by_account.is_empty() && position.ahead_accounts == 0 {
        out.push_str("\nno job is ahead of it\n");
        return out;
    }
    out.push_str("\njobs ahead of it, by account:\n");
    let rows: Vec<Vec<String>> = accounts_by_count(position)
        .into_iter()
        .map(|(account, n)| vec![account.clone(), n.to_string()])
        .collect();
    out.push_str(&aligned(&ACCOUNT_COLUMNS, &rows));
    let listed = position.ahead_by_account.len() as u64;
    if position.ahead_accounts > listed {
        let listed_entries: u64 = position.ahead_by_account.values().sum();
        let other_entries = (position.rank - 1).saturating_sub(listed_entries);
        out.push_str(&format!(
            "... and {} more accounts with {} entries ahead (--top-accounts all lists every one)\n",
            position.ahead_accounts - listed,
            other_entries
        ));
    }
    if let Some(gap) = &position.gap {
        out.push_str(&format!(
            "\nto pass job {} (user {}, account {}, priority {}): {} points\n",
            gap.job, gap.user, gap.account, gap.priority, gap.points
        ));
        let rows: Vec<Vec<String>> = gap
            .factors
            .iter()
            .map(|f| {
                vec![
                    f.name.clone(),
                    fixed6(f.own),
                    fixed6(f.ahead),
                    format!("{:.2}", f.weighted_gap),
                    opt_fixed6(f.needed),
                ]
            })
            .collect();
        out.push_str(&aligned(&GAP_COLUMNS, &rows));
    }
    out
}

/// The place as one JSON object: `job` (as `sprio --json` writes a job;
/// its first entry's pair, with its `sluid` when it has one), `rank`,
/// `entries` (the job's other entries in the queue: `partition`, `qos`,
/// `rank`, `priority`), `partitions` (`partition`, `rank`, `priority`),
/// `ahead_by_account` (account -> jobs: the accounts with the most jobs
/// ahead, as many as were asked for), `ahead_accounts` (how many accounts
/// have jobs ahead, listed or not), `gap` (`null` at rank 1: `job_id`,
/// `user`, `account`, `priority`, `points`, `factors` with `name`, `own`,
/// `ahead`, `weighted_gap`, `needed`).
pub fn render_json(position: &Position) -> String {
    let gap = position.gap.as_ref().map(|gap| {
        let factors: Vec<Value> = gap
            .factors
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "own": json_f64(Some(f.own)),
                    "ahead": json_f64(Some(f.ahead)),
                    "weighted_gap": json_f64(Some(f.weighted_gap)),
                    "needed": json_f64(f.needed),
                })
            })
            .collect();
        json!({
            "job_id": gap.job,
            "user": gap.user,
            "account": gap.account,
            "priority": gap.priority,
            "points": gap.points,
            "factors": factors,
        })
    });
    let object = json!({
        "job": job_json_keyed(&position.job, position.sluid),
        "rank": position.rank,
        "entries": position.entries,
        "partitions": position.partitions,
        "ahead_by_account": position.ahead_by_account,
        "ahead_accounts": position.ahead_accounts,
        "gap": gap,
    });
    let mut text = serde_json::to_string_pretty(&object).expect("plain values always serialize");
    text.push('\n');
    text
}
