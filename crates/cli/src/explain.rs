//! `fairflow explain JOB`: why a job has its priority: every factor with its
//! value, weight and contribution, the model and algorithm, and the
//! fair-share path from `root` to the job's user association.

use anyhow::bail;
use fairflow_model::report::FairshareRow;
use fairflow_serve::explain::{render_json, render_text};

use crate::output::emit;
use crate::state_args::StateArgs;

/// `fairflow explain` flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job id.
    job: String,
    #[command(flatten)]
    state: StateArgs,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The rows from `root` down to the user association `(account, user)`, in
/// that order, from a table in tree order; empty when it is not there.
fn path_to(rows: &[FairshareRow], account: &str, user: &str) -> Vec<FairshareRow> {
    let Some(index) = rows
        .iter()
        .position(|r| r.account == account && r.user.as_deref() == Some(user))
    else {
        return Vec::new();
    };
    // In tree order, each ancestor is the nearest earlier account row one
    // level up.
    let mut path = vec![rows[index].clone()];
    let mut depth = rows[index].depth;
    for row in rows[..index].iter().rev() {
        if depth == 0 {
            break;
        }
        if row.user.is_none() && row.depth + 1 == depth {
            path.push(row.clone());
            depth = row.depth;
        }
    }
    path.reverse();
    path
}

/// Replay, compute the job's priority and the fair-share table, print why.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let replay = args.state.load()?;
    let state = &replay.state;
    let factors = fairflow_oracle::fairshare::user_factors(state);
    let priorities = fairflow_oracle::priority::evaluate(state, &factors);
    let Some(job) = priorities.iter().find(|p| p.job == args.job) else {
        match state.jobs.get(&args.job) {
            Some(_) => bail!(
                "job {} has no priority as of {}: it is running (PriorityFlags=CALCULATE_RUNNING \
                 evaluates running jobs) or not yet past its begin time",
                args.job,
                state.now
            ),
            None => bail!(
                "job {} is not pending, held or running as of {}",
                args.job,
                state.now
            ),
        }
    };
    let table = fairflow_oracle::fairshare::table(state);
    let path = path_to(&table.rows, &job.account, &job.user);
    let text = if args.json {
        render_json(job, table.algorithm, &path)
    } else {
        render_text(job, table.algorithm, &path)
    };
    emit(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_climbs_account_rows_in_tree_order() {
        let rows = vec![
            FairshareRow::new("root", None, 0),
            FairshareRow::new("a", None, 1),
            FairshareRow::new("a", Some("u"), 2),
            FairshareRow::new("b", None, 2),
            FairshareRow::new("b", Some("v"), 3),
            FairshareRow::new("c", None, 1),
            FairshareRow::new("c", Some("w"), 2),
        ];
        let names = |path: Vec<FairshareRow>| -> Vec<(String, Option<String>)> {
            path.into_iter().map(|r| (r.account, r.user)).collect()
        };
        assert_eq!(
            names(path_to(&rows, "b", "v")),
            vec![
                ("root".to_string(), None),
                ("a".to_string(), None),
                ("b".to_string(), None),
                ("b".to_string(), Some("v".to_string())),
            ]
        );
        assert_eq!(names(path_to(&rows, "c", "w")).len(), 3);
        assert!(path_to(&rows, "x", "y").is_empty());
    }
}
