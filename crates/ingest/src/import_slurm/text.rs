//! Reading Slurm's text outputs: [`Lines`] (one input's lines, rows and
//! fields, each error naming the file, the line and the field), [`Header`]
//! (a header line's columns), and the checks of names and shares every
//! reader applies.

use std::collections::BTreeMap;

use fairflow_model::Shares;

use super::{Associations, ImportError, Source};
use crate::parse::MAX_SHARES;

/// A header line (its number and trimmed column names) and the rows after it.
pub(super) struct Header<'a, R> {
    pub(super) line: u64,
    pub(super) names: Vec<&'a str>,
    pub(super) rows: R,
}

impl<R> Header<'_, R> {
    /// The index of the column named `want` (case-insensitive), if any.
    pub(super) fn column(&self, want: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(want))
    }

    /// The index of the column named `want`; its absence is an error on the
    /// header line naming it (`hint` follows the message: how to get it).
    pub(super) fn need(
        &self,
        lines: &Lines<'_>,
        want: &str,
        hint: &str,
    ) -> Result<usize, ImportError> {
        self.column(want).ok_or_else(|| {
            lines.err(
                self.line,
                Some(want),
                format!("the header has no `{want}` column{hint}"),
            )
        })
    }
}

/// Why a value in a cell of Slurm's output is malformed (each message names
/// the value; the caller names the line and the field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    /// Not a hostlist.
    #[error("`{0}` is not a Slurm hostlist (like node[01-16,20])")]
    NotHostlist(String),
    /// Not an integer >= 0.
    #[error("`{0}` is not an integer >= 0")]
    NotCount(String),
    /// A `gpu` GRES item whose last part is not a count.
    #[error("`{0}` does not end in a GPU count")]
    NoGpuCount(String),
    /// A `Gres` whose GPUs overflow a count.
    #[error("`{0}`: too many GPUs")]
    TooManyGpus(String),
    /// Not a Slurm duration (the duration parser's reason).
    #[error("{0}")]
    NotDuration(String),
    /// A `sacctmgr dump` line with a quote not closed.
    #[error("a quote is not closed")]
    OpenQuote,
    /// A TRES item without `=`.
    #[error("`{0}` is not NAME=COUNT")]
    NotTresItem(String),
    /// A TRES item whose value is not a count.
    #[error("`{item}`: `{value}` is not a count")]
    NotTresCount {
        /// The item (`NAME=VALUE`).
        item: String,
        /// Its value.
        value: String,
    },
}

pub(super) struct Lines<'a> {
    pub(super) source: Source<'a>,
}

impl<'a> Lines<'a> {
    pub(super) fn err(
        &self,
        line: u64,
        field: Option<&str>,
        reason: impl std::fmt::Display,
    ) -> ImportError {
        ImportError {
            file: self.source.name.to_string(),
            line,
            field: field.map(str::to_string),
            reason: reason.to_string(),
        }
    }

    /// Non-blank, non-`#` lines with their 1-based numbers.
    pub(super) fn rows(&self) -> impl Iterator<Item = (u64, &'a str)> {
        self.source
            .text
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim_end_matches('\r')))
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    }

    /// Split a `|` row into exactly `names.len()` trimmed fields; a trailing
    /// `|` (the `-p` form) is allowed.
    pub(super) fn fields(
        &self,
        line: u64,
        text: &'a str,
        names: &[&str],
    ) -> Result<Vec<&'a str>, ImportError> {
        self.fields_from(line, text, names, names.len())
    }

    /// Split a `|` row into `required` to `names.len()` trimmed fields (the
    /// last ones optional); a trailing `|` (the `-p` form) is allowed.
    pub(super) fn fields_from(
        &self,
        line: u64,
        text: &'a str,
        names: &[&str],
        required: usize,
    ) -> Result<Vec<&'a str>, ImportError> {
        let mut fields: Vec<&str> = text.split('|').map(str::trim).collect();
        if fields.len() > required && fields.last() == Some(&"") {
            fields.pop();
        }
        if fields.len() < required || fields.len() > names.len() {
            let count = if required == names.len() {
                format!("{}", names.len())
            } else {
                format!("{required} to {}", names.len())
            };
            return Err(self.err(
                line,
                None,
                format!(
                    "expected {count} `|`-separated fields ({}), found {}",
                    names.join("|"),
                    fields.len()
                ),
            ));
        }
        Ok(fields)
    }

    /// The header line of a `|`-separated output (`what` names the command,
    /// for the error when the file is empty): its line, its trimmed column
    /// names, and the rows after it.
    pub(super) fn header(
        &self,
        what: &str,
    ) -> Result<Header<'a, impl Iterator<Item = (u64, &'a str)>>, ImportError> {
        let mut rows = self.rows();
        let Some((line, header)) = rows.next() else {
            return Err(self.err(
                1,
                None,
                format!("empty: expected the header line of `{what}`"),
            ));
        };
        Ok(Header {
            line,
            names: header.split('|').map(str::trim).collect(),
            rows,
        })
    }

    /// A row's cells under a header of `columns` names (a trailing `|`
    /// allowed), untrimmed.
    pub(super) fn cells(
        &self,
        line: u64,
        text: &'a str,
        columns: usize,
    ) -> Result<Vec<&'a str>, ImportError> {
        let cells: Vec<&str> = text.split('|').collect();
        if cells.len() < columns || cells.len() > columns + 1 {
            return Err(self.err(
                line,
                None,
                format!(
                    "expected {columns} `|`-separated fields as the header says, found {}",
                    cells.len()
                ),
            ));
        }
        Ok(cells)
    }

    /// A job's user association must be listed, and the job listed once.
    pub(super) fn check_job(
        &self,
        line: u64,
        tree: &Associations,
        seen: &mut BTreeMap<String, u64>,
        (job, user, account): (&str, &str, &str),
    ) -> Result<(), ImportError> {
        if !tree
            .user_lines
            .contains_key(&(account.to_string(), user.to_string()))
        {
            return Err(self.err(
                line,
                Some("User"),
                format!("user `{user}` in account `{account}` is not in the association list"),
            ));
        }
        if let Some(previous) = seen.insert(job.to_string(), line) {
            return Err(self.err(
                line,
                Some("JobID"),
                format!("job `{job}` is already listed on line {previous}"),
            ));
        }
        Ok(())
    }

    /// A name as the event log accepts it.
    pub(super) fn name(&self, line: u64, field: &str, text: &str) -> Result<String, ImportError> {
        check_name(text)
            .map(|()| text.to_string())
            .map_err(|reason| self.err(line, Some(field), reason))
    }
}

/// Is `text` a name Slurm's outputs may give (an account, a user, a job id,
/// a partition): not empty, at most 256 bytes, no spaces or control
/// characters? The reason when not.
pub(crate) fn check_name(text: &str) -> Result<(), &'static str> {
    if text.is_empty() {
        Err("must not be empty")
    } else if text.len() > 256 {
        Err("is longer than 256 bytes")
    } else if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err("must not contain spaces or control characters")
    } else {
        Ok(())
    }
}

pub(super) fn parse_shares(text: &str) -> Option<Shares> {
    if text.eq_ignore_ascii_case("parent") {
        return Some(Shares::Parent);
    }
    let n: u64 = text.parse().ok()?;
    (n <= MAX_SHARES).then_some(Shares::Value(n as u32))
}
