//! Slurm's command-line habits, shared by `sshare`, `sprio` and `top`:
//! comma-separated selections (`-A ACCOUNTS`, `-u USERS`, `-j JOBS`,
//! `-p PARTITIONS`), `-o FIELDS` (columns chosen by their header names, in
//! the order given, case-insensitive, as `sshare -o` takes them), and
//! `-n`/`--noheader`. Selections (`fairflow_model::report::Selection`)
//! filter the engine's rows before they are rendered, locally or by the
//! service (`--server`: as query parameters, [`route`]); `-o` and no-header
//! reshape the rendered `|`-separated text, wherever it was rendered.

use anyhow::bail;
use fairflow_model::report::Selection;
use fairflow_serve::OutputFormat;

use crate::remote::format_param;

/// The job selections `sprio` and `top` take as Slurm's `sprio`/`squeue`
/// do: `-A ACCOUNTS`, `-u USERS`, `-p PARTITIONS` (comma-separated).
#[derive(Debug, clap::Args)]
pub struct JobSelectionArgs {
    /// Only these accounts' jobs (comma-separated), as `squeue -A`.
    #[arg(
        short = 'A',
        long = "account",
        value_name = "ACCOUNTS",
        value_delimiter = ','
    )]
    pub accounts: Vec<String>,
    /// Only these users' jobs (comma-separated), as `squeue -u`.
    #[arg(
        short = 'u',
        long = "user",
        value_name = "USERS",
        value_delimiter = ','
    )]
    pub users: Vec<String>,
    /// Only jobs in these partitions (comma-separated), as `squeue -p`.
    #[arg(
        short = 'p',
        long = "partition",
        value_name = "PARTITIONS",
        value_delimiter = ','
    )]
    pub partitions: Vec<String>,
}

impl JobSelectionArgs {
    /// These selections and `jobs` as one [`Selection`].
    pub fn selection(&self, jobs: &[String]) -> Selection {
        selection(jobs, &self.users, &self.accounts, &self.partitions)
    }
}

/// Slurm's selections as one [`Selection`].
pub fn selection(
    jobs: &[String],
    users: &[String],
    accounts: &[String],
    partitions: &[String],
) -> Selection {
    Selection {
        jobs: jobs.to_vec(),
        users: users.to_vec(),
        accounts: accounts.to_vec(),
        partitions: partitions.to_vec(),
    }
}

/// A service route with its query: `format`, the selection's lists
/// (`jobs`, `users`, `accounts`, `partitions`, comma-separated) and the
/// `extra` parameters, each percent-encoded; empty values are left out.
pub fn route(
    path: &str,
    format: OutputFormat,
    selection: &Selection,
    extra: &[(&str, String)],
) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("format", format_param(format));
    for (name, list) in [
        ("jobs", &selection.jobs),
        ("users", &selection.users),
        ("accounts", &selection.accounts),
        ("partitions", &selection.partitions),
    ] {
        if !list.is_empty() {
            query.append_pair(name, &list.join(","));
        }
    }
    for (name, value) in extra {
        if !value.is_empty() {
            query.append_pair(name, value);
        }
    }
    format!("{path}?{}", query.finish())
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

/// Print with `-o`/no-header when asked, else the renderer's own text;
/// `render` writes the answer in a form (once), locally or by asking the
/// service.
pub fn shaped(
    render: impl FnOnce(OutputFormat) -> anyhow::Result<String>,
    format: OutputFormat,
    fields: &[String],
    header: bool,
) -> anyhow::Result<String> {
    if matches!(format, OutputFormat::Json | OutputFormat::SlurmJson)
        || (fields.is_empty() && header)
    {
        return render(format);
    }
    if fields.is_empty() && format == OutputFormat::Table {
        // Only the header goes: keep the renderer's own alignment.
        let text = render(format)?;
        return Ok(text.lines().skip(1).map(|l| format!("{l}\n")).collect());
    }
    reshape(
        &render(OutputFormat::Parsable)?,
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
