//! What-if's answer (`fairflow whatif`, `POST /v1/whatif`) as two tables,
//! the associations whose fair-share factor changes and the jobs whose
//! priority or place changes, each ranked by impact and cut to `k` rows; or
//! the whole answer as JSON (`fairflow_model::report::whatif::WhatIf`).

use fairflow_model::report::whatif::{WhatIf, WhatIfRows};

use crate::format::{aligned, column as col, opt_fixed6, parsable, Column, Justify};
use crate::OutputFormat;

const ASSOC_COLUMNS: [Column; 5] = [
    col("Account", 10, Justify::Left),
    col("User", 10, Justify::Left),
    col("FSBefore", 11, Justify::Right),
    col("FSAfter", 11, Justify::Right),
    col("FSChange", 11, Justify::Right),
];

const JOB_COLUMNS: [Column; 9] = [
    col("JobID", 8, Justify::Left),
    col("User", 10, Justify::Left),
    col("Account", 10, Justify::Left),
    col("PrioBefore", 10, Justify::Right),
    col("PrioAfter", 10, Justify::Right),
    col("PrioChange", 10, Justify::Right),
    col("PosBefore", 9, Justify::Right),
    col("PosAfter", 9, Justify::Right),
    col("Moved", 6, Justify::Right),
];

fn cell<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// `answer` in `format`, the first `k` rows of each list (JSON: the whole
/// answer, each list cut to `k`). In the tables `Moved` is the places gained
/// (negative: lost), empty for a job entering or leaving the queue.
pub fn render(answer: &WhatIf, k: usize, format: OutputFormat) -> String {
    let changed = (answer.associations.len(), answer.jobs.len());
    render_counted(answer, changed, k, format)
}

/// An answer already cut to its rows ([`WhatIfRows`]) in `format`, as
/// [`render`] writes the whole answer cut to as many rows.
pub fn render_rows(rows: &WhatIfRows, format: OutputFormat) -> String {
    let changed = (
        rows.associations_changed as usize,
        rows.jobs_changed as usize,
    );
    render_counted(&rows.answer, changed, usize::MAX, format)
}

/// [`render`] of an answer whose whole lists have `changed` rows
/// (associations, jobs).
fn render_counted(
    answer: &WhatIf,
    changed: (usize, usize),
    k: usize,
    format: OutputFormat,
) -> String {
    let assocs: Vec<Vec<String>> = answer
        .associations
        .iter()
        .take(k)
        .map(|a| {
            vec![
                a.account.clone(),
                a.user.clone(),
                opt_fixed6(a.before),
                opt_fixed6(a.after),
                format!("{:+.6}", a.change()),
            ]
        })
        .collect();
    let jobs: Vec<Vec<String>> = answer
        .jobs
        .iter()
        .take(k)
        .map(|j| {
            vec![
                j.job.clone(),
                j.user.clone(),
                j.account.clone(),
                cell(j.priority_before),
                cell(j.priority_after),
                format!("{:+}", j.priority_change()),
                cell(j.position_before),
                cell(j.position_after),
                j.places_gained()
                    .map(|p| format!("{p:+}"))
                    .unwrap_or_default(),
            ]
        })
        .collect();
    match format {
        OutputFormat::Json | OutputFormat::SlurmJson => {
            let mut cut = answer.clone();
            cut.associations.truncate(k);
            cut.jobs.truncate(k);
            serde_json::to_string(&cut).expect("plain values always serialize")
        }
        OutputFormat::Parsable => format!(
            "{}\n{}",
            parsable(&ASSOC_COLUMNS, &assocs),
            parsable(&JOB_COLUMNS, &jobs)
        ),
        OutputFormat::Table => format!(
            "What if, at t={} ({} proposed events applied): {} associations and {} jobs change.\n\n{}\n{}",
            answer.at,
            answer.applied,
            changed.0,
            changed.1,
            aligned(&ASSOC_COLUMNS, &assocs),
            aligned(&JOB_COLUMNS, &jobs)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::report::whatif::{AssocChange, JobChange};

    fn answer() -> WhatIf {
        WhatIf {
            at: 100,
            applied: 1,
            associations: vec![AssocChange {
                account: "a".into(),
                user: "u".into(),
                before: Some(0.5),
                after: Some(0.25),
            }],
            jobs: vec![
                JobChange {
                    job: "1".into(),
                    user: "u".into(),
                    account: "a".into(),
                    priority_before: Some(500),
                    priority_after: Some(250),
                    position_before: Some(1),
                    position_after: Some(2),
                },
                JobChange {
                    job: "3".into(),
                    user: "u".into(),
                    account: "a".into(),
                    priority_before: None,
                    priority_after: Some(7),
                    position_before: None,
                    position_after: Some(3),
                },
            ],
        }
    }

    #[test]
    fn the_parsable_form_has_one_row_per_change_with_signed_changes() {
        assert_eq!(
            render(&answer(), 10, OutputFormat::Parsable),
            "Account|User|FSBefore|FSAfter|FSChange\na|u|0.500000|0.250000|-0.250000\n\n\
             JobID|User|Account|PrioBefore|PrioAfter|PrioChange|PosBefore|PosAfter|Moved\n\
             1|u|a|500|250|-250|1|2|-1\n3|u|a||7|+7||3|\n"
        );
        // k cuts each list.
        let one = render(&answer(), 1, OutputFormat::Json);
        let value: serde_json::Value = serde_json::from_str(&one).unwrap();
        assert_eq!(value["jobs"].as_array().unwrap().len(), 1);
        assert_eq!(value["associations"][0]["after"], 0.25);
        let table = render(&answer(), 10, OutputFormat::Table);
        assert!(table.starts_with(
            "What if, at t=100 (1 proposed events applied): 1 associations and 2 jobs change."
        ));
    }
}
