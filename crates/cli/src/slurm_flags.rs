//! Slurm's command-line habits, shared by `sshare`, `sprio` and `top`:
//! comma-separated selections (`-A ACCOUNTS`, `-u USERS`, `-j JOBS`,
//! `-p PARTITIONS`), `-o FIELDS` (columns chosen by their header names, in
//! the order given, case-insensitive, as `sshare -o` takes them), and
//! `-n`/`--noheader`. Selections filter the engine's rows before they are
//! rendered; `-o` and no-header reshape the rendered `|`-separated text.

use anyhow::bail;
use fairflow_model::report::{FairshareTable, JobPriority};
use fairflow_serve::OutputFormat;

fn wanted(selection: &[String], value: &str) -> bool {
    selection.is_empty() || selection.iter().any(|s| s == value)
}

/// The rows of `accounts` (each listed account's own row and its user
/// associations) and of `users` (their user associations), as
/// `sshare -A`/`-u` select them; root stays first when no account is given.
pub fn filter_fairshare(table: &mut FairshareTable, accounts: &[String], users: &[String]) {
    if accounts.is_empty() && users.is_empty() {
        return;
    }
    table.rows.retain(|row| {
        let account_ok = wanted(accounts, &row.account);
        match &row.user {
            None => (account_ok && users.is_empty()) || (accounts.is_empty() && row.depth == 0),
            Some(user) => account_ok && wanted(users, user),
        }
    });
}

/// The jobs selected by `-j`, `-u`, `-A`, `-p` (every given selection must
/// match). `-p` keeps, of a job submitted to several partitions or QOS, the
/// (partition, QOS) pairs in those partitions (sprio's rows there).
pub fn filter_jobs(
    jobs: &mut Vec<JobPriority>,
    ids: &[String],
    users: &[String],
    accounts: &[String],
    partitions: &[String],
) {
    jobs.retain_mut(|j| {
        j.pairs.retain(|pair| wanted(partitions, &pair.partition));
        let in_partitions = wanted(partitions, &j.partition) || !j.pairs.is_empty();
        wanted(ids, &j.job)
            && wanted(users, &j.user)
            && wanted(accounts, &j.account)
            && in_partitions
    });
}

/// Reshape `|`-separated text (header first): keep the `fields` columns in
/// their order (all when empty), drop the header when `header` is false, and
/// write it `|`-separated (`parsable`) or as a left-aligned table.
pub fn reshape(
    text: &str,
    fields: &[String],
    header: bool,
    parsable: bool,
) -> anyhow::Result<String> {
    let mut lines = text.lines();
    let Some(head) = lines.next() else {
        return Ok(String::new());
    };
    let names: Vec<&str> = head.split('|').collect();
    let columns: Vec<usize> = if fields.is_empty() {
        (0..names.len()).collect()
    } else {
        let mut columns = Vec::new();
        for field in fields {
            // A name can repeat (sprio's two PARTITION columns): the first not yet taken.
            match names
                .iter()
                .enumerate()
                .position(|(i, n)| n.eq_ignore_ascii_case(field) && !columns.contains(&i))
            {
                Some(i) => columns.push(i),
                None => bail!(
                    "unknown field `{field}` for -o: the fields are {}",
                    names.join(",")
                ),
            }
        }
        columns
    };
    let mut rows: Vec<Vec<&str>> = Vec::new();
    if header {
        rows.push(columns.iter().map(|&i| names[i]).collect());
    }
    for line in lines {
        let cells: Vec<&str> = line.split('|').collect();
        rows.push(
            columns
                .iter()
                .map(|&i| cells.get(i).copied().unwrap_or(""))
                .collect(),
        );
    }
    let mut out = String::new();
    if parsable {
        for row in rows {
            out.push_str(&row.join("|"));
            out.push('\n');
        }
        return Ok(out);
    }
    let widths: Vec<usize> = (0..columns.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join(" ").trim_end());
        out.push('\n');
    }
    Ok(out)
}

/// Print with `-o`/no-header when asked, else the renderer's own text.
pub fn shaped(
    render: impl Fn(OutputFormat) -> String,
    format: OutputFormat,
    fields: &[String],
    header: bool,
) -> anyhow::Result<String> {
    if format == OutputFormat::Json || (fields.is_empty() && header) {
        return Ok(render(format));
    }
    if fields.is_empty() && format == OutputFormat::Table {
        // Only the header goes: keep the renderer's own alignment.
        let text = render(format);
        return Ok(text.lines().skip(1).map(|l| format!("{l}\n")).collect());
    }
    reshape(
        &render(OutputFormat::Parsable),
        fields,
        header,
        format == OutputFormat::Parsable,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_chosen_by_name_in_order_and_the_header_can_go() {
        let text = "Account|User|RawShares|FairShare\nroot||1|\nphys|alice|1|0.500000\n";
        let fields = vec!["user".to_string(), "fairshare".to_string()];
        assert_eq!(
            reshape(text, &fields, true, true).unwrap(),
            "User|FairShare\n|\nalice|0.500000\n"
        );
        assert_eq!(
            reshape(text, &fields, false, true).unwrap(),
            "|\nalice|0.500000\n"
        );
        assert_eq!(
            reshape(text, &fields, true, false).unwrap(),
            "User  FairShare\n\nalice 0.500000\n"
        );
        let error = reshape(text, &["nope".to_string()], true, true)
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `nope`"), "{error}");
    }
}
