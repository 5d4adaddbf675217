//! `fairflow import slurm`: a real Slurm's own outputs to an event log, so a
//! site can load its tree, usage, configuration and queue.
//!
//! # Inputs
//! - **Associations**, either form:
//!   - `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`:
//!     rows `cluster|account|user|share|parent`;
//!   - `sacctmgr show assoc tree -P` (Slurm's default columns with their header
//!     line, `Cluster|Account|User|Partition|Share|Priority|GrpJobs|...`): the
//!     columns are found by name (`Account`, `User` and `Share` are needed,
//!     `Cluster` is used when present); an account's parent is its
//!     `ParentName` cell when there is such a column (`format=...,ParentName`),
//!     else the account the `tree` option's indentation puts it under. The
//!     default columns without `tree` do not say an account's parent, which is
//!     an error naming `ParentName`. A non-empty `Partition` (a per-partition
//!     association) is an error.
//!
//!   An account's row has an empty user (and its parent account); a user
//!   association's row names its account and user (its `ParentName` is
//!   ignored). `Share` is an integer (0 to 2^31 - 2) or `parent`. `root`'s
//!   own row creates nothing.
//! - **Usage**, `sshare -a -l -P` (or `-p`): the first line is the header, which
//!   gives the columns (`Account`, `User` and `RawUsage` are used; account names
//!   may be indented). A user association's `RawUsage` is its own usage; an
//!   account's own usage (charged to the account itself, e.g. by removed
//!   associations) is its `RawUsage` minus its children's, clamped at 0.
//!   Slurm truncates `RawUsage` to an integer, so that difference can be off by
//!   up to one TRES-second per child.
//! - **Usage as jobs** (instead of `sshare`), `sacct -a -X -P
//!   --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`
//!   (with its header; see the `sacct` submodule): each job that started
//!   before `t` is submitted and started at its `Start` and ended at its
//!   `End`, and the rest of the import moves to the first job's start, so the
//!   engines charge and decay the jobs' usage themselves.
//! - **QOS**, `sacctmgr show qos -P` (with its header): `Name`, `Priority`,
//!   `UsageFactor`.
//! - **Cluster size**, `scontrol show node` output, or `slurm.conf`'s
//!   `NodeName=` lines (see the `nodes` submodule).
//! - **Associations from a dump**: `sacctmgr dump CLUSTER file=F`'s file is
//!   recognised by its `Cluster - '...'` lines, wherever the associations go.
//! - **Configuration**, `slurm.conf` or `scontrol show config`'s output (see
//!   [`crate::slurm_conf`]): its `Priority*` and `FairShareDampeningFactor`
//!   parameters.
//! - **Queue**, `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"`: rows
//!   `jobid|user|account|partition|qos|submit time|cpus|nodes|time limit`,
//!   optionally a tenth cell, the eligible time (squeue's `EligibleTime`
//!   field, which only its `-O` form prints: `squeue -h -t PD -O
//!   "JobID:|,UserName:|,Account:|,Partition:|,QOS:|,SubmitTime:|,NumCPUs:|,NumNodes:|,TimeLimit:|,EligibleTime"`,
//!   cells trimmed). Times are ISO 8601 local time as squeue prints it
//!   (`2024-05-01T12:34:56`, in the zone of `TZ` or the system's); the
//!   partition and the QOS may be comma-separated lists (a job submitted to
//!   several: passed through, each listed name defined by a `partition` /
//!   `qos` event with no attributes before the submits, as the book requires
//!   of lists), an empty QOS or `(null)` means none, and the time limit is
//!   Slurm's duration (`30:00`, `1:00:00`, `2-00:00:00`) or `UNLIMITED` /
//!   `NOT_SET` (none).
//!
//! # Output
//! Events all at one time `t` (without `sacct`), in an order the validator
//! accepts: accounts (each after its parent), user associations, usage, one
//! `config` event, the `cluster`, the `qos` events, then one `submit` per
//! pending job (in submit-time order); with `sacct`, everything before the
//! queue is at the first job's start, the jobs' events at their times, and a
//! `tick` ends the log at `t`. Each `submit` keeps the
//! job's submit time (`submitted`, at most `t`: a later one is an error), so
//! its age is what Slurm's is; an eligible time becomes the job's `begin`
//! (Slurm's AGE counts from it unless `PriorityFlags=ACCRUE_ALWAYS`), and
//! `Unknown` (a job not yet eligible, whose age Slurm holds at 0) the time `t`.
//!
//! **Architecture invariant:** malformed input is an [`ImportError`] naming the
//! file, the line and the field; nothing here panics on input.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::event::{is_list, JobSpec, Op};
use fairflow_model::time::parse_slurm_duration_secs;
use fairflow_model::tres::TresCounts;
use fairflow_model::{Config, Event, Shares, Time};
use serde_json::Value;

use crate::parse::MAX_SHARES;
use crate::slurm_conf::priority_lines;
use crate::slurm_time::parse_site_time;

/// One input: its name (as given on the command line) and its text.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file name, for error messages.
    pub name: &'a str,
    /// The whole text.
    pub text: &'a str,
}

/// What to import.
#[derive(Debug, Clone, Copy)]
pub struct SlurmImport<'a> {
    /// `sacctmgr -nP show assoc format=Cluster,Account,User,Share,ParentName`.
    pub assoc: Source<'a>,
    /// `sshare -a -l -P`, for `RawUsage`.
    pub sshare: Option<Source<'a>>,
    /// `slurm.conf`.
    pub slurm_conf: Option<Source<'a>>,
    /// `squeue -h -t PD -o "%i|%u|%a|%P|%q|%V|%C|%D|%l"` (optionally a
    /// tenth cell, the eligible time).
    pub squeue: Option<Source<'a>>,
    /// `sacctmgr show qos -P` (with its header): each QOS's priority and
    /// usage factor.
    pub qos: Option<Source<'a>>,
    /// `scontrol show node`: the cluster's size (else `slurm_conf`'s
    /// `NodeName=` lines).
    pub nodes: Option<Source<'a>>,
    /// `sacct -a -X -P --format=JobID,User,Account,Partition,QOS,Start,End,AllocTRES,State`:
    /// the usage history as jobs, instead of `sshare`.
    pub sacct: Option<Source<'a>>,
    /// Only this cluster's associations; required when there are several.
    pub cluster: Option<&'a str>,
    /// The time of every event.
    pub t: Time,
}

/// A malformed input line: the file, the line (1-based), the field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: line {line}: {}{reason}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct ImportError {
    /// The file, as named by the caller.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// The column at fault (`Share`, `RawUsage`, ...), if one is.
    pub field: Option<String>,
    /// What is wrong.
    pub reason: String,
}

/// Parameters of `slurm.conf` that exist in Slurm but do not change
/// fair-share or priorities; they are left out of the `config` event.
const IGNORED_SLURM_PARAMETERS: [&str; 4] = [
    "prioritytype",
    "priorityparameters",
    "prioritysitefactorplugin",
    "prioritysitefactorparameters",
];

/// A header line (its number and trimmed column names) and the rows after it.
struct Header<'a, R> {
    line: u64,
    names: Vec<&'a str>,
    rows: R,
}

impl<R> Header<'_, R> {
    /// The index of the column named `want` (case-insensitive), if any.
    fn column(&self, want: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(want))
    }

    /// The index of the column named `want`; its absence is an error on the
    /// header line naming it (`hint` follows the message: how to get it).
    fn need(&self, lines: &Lines<'_>, want: &str, hint: &str) -> Result<usize, ImportError> {
        self.column(want).ok_or_else(|| {
            lines.err(
                self.line,
                Some(want),
                format!("the header has no `{want}` column{hint}"),
            )
        })
    }
}

struct Lines<'a> {
    source: Source<'a>,
}

impl<'a> Lines<'a> {
    fn err(&self, line: u64, field: Option<&str>, reason: impl Into<String>) -> ImportError {
        ImportError {
            file: self.source.name.to_string(),
            line,
            field: field.map(str::to_string),
            reason: reason.into(),
        }
    }

    /// Non-blank, non-`#` lines with their 1-based numbers.
    fn rows(&self) -> impl Iterator<Item = (u64, &'a str)> {
        self.source
            .text
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim_end_matches('\r')))
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    }

    /// Split a `|` row into exactly `names.len()` trimmed fields; a trailing
    /// `|` (the `-p` form) is allowed.
    fn fields(
        &self,
        line: u64,
        text: &'a str,
        names: &[&str],
    ) -> Result<Vec<&'a str>, ImportError> {
        self.fields_from(line, text, names, names.len())
    }

    /// Split a `|` row into `required` to `names.len()` trimmed fields (the
    /// last ones optional); a trailing `|` (the `-p` form) is allowed.
    fn fields_from(
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
    fn header(
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
    fn cells(&self, line: u64, text: &'a str, columns: usize) -> Result<Vec<&'a str>, ImportError> {
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
    fn check_job(
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
    fn name(&self, line: u64, field: &str, text: &str) -> Result<String, ImportError> {
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

fn parse_shares(text: &str) -> Option<Shares> {
    if text.eq_ignore_ascii_case("parent") {
        return Some(Shares::Parent);
    }
    let n: u64 = text.parse().ok()?;
    (n <= MAX_SHARES).then_some(Shares::Value(n as u32))
}

#[derive(Debug)]
struct AccountRow {
    line: u64,
    parent: String,
    shares: Shares,
}

/// The association tree read from `sacctmgr`.
#[derive(Debug, Default)]
struct Associations {
    /// Accounts (not root) by name, with their rows.
    accounts: BTreeMap<String, AccountRow>,
    /// Accounts in input order.
    account_order: Vec<String>,
    /// User associations `(account, user)` with their line and shares, in input order.
    users: Vec<(String, String, u64, Shares)>,
    user_lines: BTreeMap<(String, String), u64>,
}

impl Associations {
    fn has_account(&self, name: &str) -> bool {
        name == "root" || self.accounts.contains_key(name)
    }
}

const ASSOC_FIELDS: [&str; 5] = ["Cluster", "Account", "User", "Share", "ParentName"];

/// Is this first row `sacctmgr`'s header line (`-P` without `-n`)?
fn is_assoc_header(text: &str) -> bool {
    let cells: Vec<&str> = text.split('|').map(str::trim).collect();
    ["Account", "User"]
        .iter()
        .all(|want| cells.iter().any(|c| c.eq_ignore_ascii_case(want)))
}

/// The association rows as `(line, [cluster, account, user, share, parent])`,
/// from either form: the headerless 5-column one, or `sacctmgr show assoc -P`
/// with its header (columns found by name; the parent of an account from
/// `ParentName`, or else from the `tree` option's indentation of `Account`).
fn association_rows(lines: &Lines<'_>) -> Result<Vec<(u64, [String; 5])>, ImportError> {
    if lines
        .rows()
        .next()
        .is_some_and(|(_, text)| dump_line(text).is_some())
    {
        return dump_rows(lines);
    }
    if !lines
        .rows()
        .next()
        .is_some_and(|(_, text)| is_assoc_header(text))
    {
        return lines
            .rows()
            .map(|(line, text)| {
                let f = lines.fields(line, text, &ASSOC_FIELDS)?;
                Ok((line, std::array::from_fn(|i| f[i].to_string())))
            })
            .collect();
    }
    let header = lines.header("sacctmgr show assoc -P")?;
    let need = |want: &str| header.need(lines, want, "");
    let (account_col, user_col, share_col) = (need("Account")?, need("User")?, need("Share")?);
    let (cluster_col, parent_col, partition_col) = (
        header.column("Cluster"),
        header.column("ParentName"),
        header.column("Partition"),
    );
    // Accounts by depth (the `tree` form's indentation), for their parents.
    let mut ancestors: Vec<String> = Vec::new();
    let mut indented = false;
    let mut out = Vec::new();
    for (line, text) in header.rows {
        let raw = lines.cells(line, text, header.names.len())?;
        let cell = |col: usize| raw[col].trim().to_string();
        if let Some(col) = partition_col.filter(|c| !raw[*c].trim().is_empty()) {
            return Err(lines.err(
                line,
                Some("Partition"),
                format!(
                    "`{}`: per-partition associations are not supported",
                    raw[col].trim()
                ),
            ));
        }
        let account_cell = raw[account_col].trim_end();
        let account = account_cell.trim_start().to_string();
        let depth = account_cell.len() - account.len();
        let user = cell(user_col);
        let mut parent = parent_col.map(cell).unwrap_or_default();
        if user.is_empty() {
            indented |= depth > 0;
            ancestors.truncate(depth);
            if parent_col.is_none() && account != "root" {
                parent = match depth.checked_sub(1).and_then(|d| ancestors.get(d)) {
                    Some(p) => p.clone(),
                    None if !indented => {
                        return Err(lines.err(
                            header.line,
                            Some("ParentName"),
                            "the header has no `ParentName` column and the accounts are not \
                             indented: an account's parent is unknown (use `sacctmgr show assoc \
                             tree -P`, or add `format=...,ParentName`)",
                        ))
                    }
                    None => {
                        return Err(lines.err(
                            line,
                            Some("Account"),
                            format!("account `{account}` is indented deeper than its parent"),
                        ))
                    }
                };
            }
            if ancestors.len() == depth {
                ancestors.push(account.clone());
            }
        }
        let cluster = cluster_col.map(cell).unwrap_or_default();
        out.push((line, [cluster, account, user, cell(share_col), parent]));
    }
    Ok(out)
}

fn read_associations(
    source: Source<'_>,
    cluster: Option<&str>,
) -> Result<Associations, ImportError> {
    let lines = Lines { source };
    let mut tree = Associations::default();
    let mut first_cluster: Option<(String, u64)> = None;
    for (line, f) in association_rows(&lines)? {
        let f: Vec<&str> = f.iter().map(String::as_str).collect();
        let row_cluster = f[0];
        match cluster {
            Some(wanted) if wanted != row_cluster => continue,
            Some(_) => {}
            None => match &first_cluster {
                None => first_cluster = Some((row_cluster.to_string(), line)),
                Some((seen, seen_line)) if seen != row_cluster => {
                    return Err(lines.err(
                        line,
                        Some("Cluster"),
                        format!(
                            "cluster `{row_cluster}` differs from `{seen}` on line {seen_line}; \
                             choose one with --cluster"
                        ),
                    ))
                }
                Some(_) => {}
            },
        }
        let account = lines.name(line, "Account", f[1])?;
        if account == "root" && f[2].is_empty() {
            // root exists from the start; its own row creates nothing.
            continue;
        }
        let shares = parse_shares(f[3]).ok_or_else(|| {
            lines.err(
                line,
                Some("Share"),
                format!(
                    "`{}` is not an integer from 0 to {MAX_SHARES}, or `parent`",
                    f[3]
                ),
            )
        })?;
        if f[2].is_empty() {
            let parent = lines.name(line, "ParentName", f[4])?;
            if parent == account {
                return Err(lines.err(
                    line,
                    Some("ParentName"),
                    "an account cannot be its own parent",
                ));
            }
            if let Some(previous) = tree.accounts.get(&account) {
                return Err(lines.err(
                    line,
                    Some("Account"),
                    format!(
                        "account `{account}` is already listed on line {}",
                        previous.line
                    ),
                ));
            }
            tree.account_order.push(account.clone());
            tree.accounts.insert(
                account,
                AccountRow {
                    line,
                    parent,
                    shares,
                },
            );
        } else {
            let user = lines.name(line, "User", f[2])?;
            let key = (account.clone(), user.clone());
            if let Some(previous) = tree.user_lines.get(&key) {
                return Err(lines.err(
                    line,
                    Some("User"),
                    format!(
                        "user `{user}` in account `{account}` is already listed on line {previous} \
                         (per-partition associations are not supported)"
                    ),
                ));
            }
            tree.user_lines.insert(key, line);
            tree.users.push((account, user, line, shares));
        }
    }
    // Every parent and every user's account must be listed.
    for name in &tree.account_order {
        let row = &tree.accounts[name];
        if !tree.has_account(&row.parent) {
            return Err(lines.err(
                row.line,
                Some("ParentName"),
                format!("parent account `{}` is not listed", row.parent),
            ));
        }
    }
    for (account, _, line, _) in &tree.users {
        if !tree.has_account(account) {
            return Err(lines.err(
                *line,
                Some("Account"),
                format!("account `{account}` is not listed"),
            ));
        }
    }
    Ok(tree)
}

/// A `sacctmgr dump` line's kind and the rest: `Kind - 'name':options`.
fn dump_line(text: &str) -> Option<(&str, &str)> {
    let (kind, rest) = text.trim().split_once(" - ")?;
    ["Cluster", "Parent", "Account", "User"]
        .contains(&kind)
        .then_some((kind, rest))
}

/// Split a dump line's `'name':Opt=value:Opt='a:b'` at the colons outside
/// quotes, each piece with its quotes removed from the value.
fn dump_fields(rest: &str) -> Result<Vec<String>, String> {
    let mut pieces = Vec::new();
    let mut piece = String::new();
    let mut quote: Option<char> = None;
    for c in rest.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ':') => pieces.push(std::mem::take(&mut piece)),
            _ => piece.push(c),
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed".to_string());
    }
    pieces.push(piece);
    Ok(pieces)
}

/// `sacctmgr dump`'s `Fairshare` as the `Share` cell: Slurm writes the raw
/// value, `parent` as 2147483647 (`SLURMDB_FS_USE_PARENT`); the word itself
/// (as written by hand) is accepted too.
fn dump_share(value: &str) -> String {
    if value == "2147483647" {
        "parent".to_string()
    } else {
        value.to_string()
    }
}

/// The association rows of a `sacctmgr dump CLUSTER file=F` file
/// (`src/sacctmgr/file_functions.c`): `Cluster - 'c':...` names the cluster;
/// each `Parent - 'p'` scopes the `Account - 'a':...` and `User - 'u':...`
/// lines after it, which are p's children; an association's shares are its
/// `Fairshare=N` (1 when not written, Slurm's default).
fn dump_rows(lines: &Lines<'_>) -> Result<Vec<(u64, [String; 5])>, ImportError> {
    let mut cluster: Option<String> = None;
    let mut parent: Option<String> = None;
    let mut out = Vec::new();
    for (line, text) in lines.rows() {
        let (kind, rest) = dump_line(text).ok_or_else(|| {
            lines.err(
                line,
                None,
                "expected a `sacctmgr dump` line: `Cluster - `, `Parent - `, `Account - ` or `User - `",
            )
        })?;
        let fields = dump_fields(rest).map_err(|reason| lines.err(line, Some(kind), reason))?;
        let name = lines.name(line, kind, fields[0].trim())?;
        let mut share = "1".to_string();
        for option in &fields[1..] {
            if let Some((key, value)) = option.split_once('=') {
                if key.trim().eq_ignore_ascii_case("Fairshare") {
                    share = dump_share(value.trim());
                    if parse_shares(&share).is_none() {
                        return Err(lines.err(
                            line,
                            Some("Fairshare"),
                            format!(
                                "`{}` is not an integer from 0 to {MAX_SHARES}, or `parent`",
                                value.trim()
                            ),
                        ));
                    }
                }
            }
        }
        match kind {
            "Cluster" => cluster = Some(name),
            "Parent" => parent = Some(name),
            _ => {
                let Some(cluster) = cluster.clone() else {
                    return Err(lines.err(
                        line,
                        Some(kind),
                        "no `Cluster - 'name'` line before it",
                    ));
                };
                let Some(parent) = parent.clone() else {
                    return Err(lines.err(line, Some(kind), "no `Parent - 'name'` line before it"));
                };
                out.push((
                    line,
                    if kind == "User" {
                        [cluster, parent, name, share, String::new()]
                    } else {
                        [cluster, name, String::new(), share, parent]
                    },
                ));
            }
        }
    }
    Ok(out)
}

/// Accounts in an order where each comes after its parent: input order,
/// except that a parent listed later is moved before its first child.
fn accounts_parents_first(
    tree: &Associations,
    source: Source<'_>,
) -> Result<Vec<String>, ImportError> {
    let lines = Lines { source };
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut order = Vec::new();
    for start in &tree.account_order {
        // Walk up to the first ancestor already placed, then place the chain top-down.
        let mut chain: Vec<&str> = Vec::new();
        let mut node = start.as_str();
        while node != "root" && !done.contains(node) {
            if chain.contains(&node) {
                let row = &tree.accounts[node];
                return Err(lines.err(
                    row.line,
                    Some("ParentName"),
                    format!("account `{node}` is its own ancestor (a cycle)"),
                ));
            }
            chain.push(node);
            node = tree.accounts[node].parent.as_str();
        }
        for name in chain.into_iter().rev() {
            done.insert(name);
            order.push(name.to_string());
        }
    }
    Ok(order)
}

/// An association: `(account, None)` for an account, `(account, Some(user))`
/// for a user association.
pub(crate) type AssocKey = (String, Option<String>);

/// Own usage per association from `sshare`, in its row order.
fn read_usage(
    source: Source<'_>,
    tree: &Associations,
) -> Result<Vec<(AssocKey, f64)>, ImportError> {
    let lines = Lines { source };
    let header = lines.header("sshare -a -l -P")?;
    let need = |want: &str| header.need(&lines, want, "");
    let (account_col, user_col, usage_col) = (need("Account")?, need("User")?, need("RawUsage")?);
    let needed = account_col.max(user_col).max(usage_col) + 1;

    // Raw (subtree) usage per association, in row order.
    let mut raw: Vec<(AssocKey, f64)> = Vec::new();
    let mut seen: BTreeMap<AssocKey, u64> = BTreeMap::new();
    for (line, text) in header.rows {
        let fields: Vec<&str> = text.split('|').map(str::trim).collect();
        if fields.len() < needed {
            return Err(lines.err(
                line,
                None,
                format!(
                    "expected at least {needed} `|`-separated fields as the header says, found {}",
                    fields.len()
                ),
            ));
        }
        let account = lines.name(line, "Account", fields[account_col])?;
        let user = match fields[user_col] {
            "" => None,
            u => Some(lines.name(line, "User", u)?),
        };
        match &user {
            None if !tree.has_account(&account) => {
                return Err(lines.err(
                    line,
                    Some("Account"),
                    format!("account `{account}` is not in the association list"),
                ))
            }
            Some(u) if !tree.user_lines.contains_key(&(account.clone(), u.clone())) => {
                return Err(lines.err(
                    line,
                    Some("User"),
                    format!("user `{u}` in account `{account}` is not in the association list"),
                ))
            }
            _ => {}
        }
        let usage_text = fields[usage_col];
        let usage: f64 = usage_text
            .parse::<f64>()
            .ok()
            .filter(|u| u.is_finite() && *u >= 0.0)
            .ok_or_else(|| {
                lines.err(
                    line,
                    Some("RawUsage"),
                    format!("`{usage_text}` is not a number >= 0"),
                )
            })?;
        let key = (account, user);
        if let Some(previous) = seen.insert(key.clone(), line) {
            return Err(lines.err(
                line,
                None,
                format!("this association is already listed on line {previous}"),
            ));
        }
        raw.push((key, usage));
    }

    Ok(own_usage(raw, |account| {
        tree.accounts.get(account).map(|a| a.parent.clone())
    }))
}

/// Each association's own usage from the raw (subtree) usage Slurm prints:
/// a user association's is its raw usage; an account's is its raw usage
/// minus its children's (its user associations' and its child accounts',
/// `parent_of` giving an account's parent), clamped at 0. In `raw`'s order.
pub(crate) fn own_usage(
    raw: Vec<(AssocKey, f64)>,
    parent_of: impl Fn(&str) -> Option<String>,
) -> Vec<(AssocKey, f64)> {
    let mut children_usage: BTreeMap<String, f64> = BTreeMap::new();
    for (key, usage) in &raw {
        let parent = match key {
            (account, Some(_)) => Some(account.clone()),
            (account, None) => parent_of(account),
        };
        if let Some(parent) = parent {
            *children_usage.entry(parent).or_default() += usage;
        }
    }
    raw.into_iter()
        .map(|(key, usage)| {
            let own = match &key {
                (_, Some(_)) => usage,
                (account, None) => {
                    (usage - children_usage.get(account).copied().unwrap_or(0.0)).max(0.0)
                }
            };
            (key, own)
        })
        .collect()
}

/// The `set` of the one `config` event, from `slurm.conf`'s priority lines.
fn read_slurm_conf(source: Source<'_>) -> Result<BTreeMap<String, Value>, ImportError> {
    let lines = Lines { source };
    let mut set: BTreeMap<String, Value> = BTreeMap::new();
    let mut scratch = Config::default();
    for (line, key, value) in priority_lines(source.text) {
        if IGNORED_SLURM_PARAMETERS.contains(&key.to_ascii_lowercase().as_str()) {
            continue;
        }
        scratch
            .set_text(&key, &value)
            .map_err(|e| lines.err(line, Some(&key), e.reason))?;
        // A later line overrides an earlier one, whatever its capitalisation.
        set.retain(|k, _| !k.eq_ignore_ascii_case(&key));
        set.insert(key, Value::String(value));
    }
    Ok(set)
}

/// `qos` events from `sacctmgr show qos -P`: its header names the columns;
/// `Name` is needed, `Priority` and `UsageFactor` are used when present (an
/// empty cell leaves the value unset: priority 0, usage factor 1).
fn read_qos(source: Source<'_>) -> Result<Vec<Op>, ImportError> {
    let lines = Lines { source };
    let header = lines.header("sacctmgr show qos -P")?;
    let name_col = header.need(
        &lines,
        "Name",
        " (is this `sacctmgr show qos -P`, with its header?)",
    )?;
    let (priority_col, factor_col) = (header.column("Priority"), header.column("UsageFactor"));
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut ops = Vec::new();
    for (line, text) in header.rows {
        let cells: Vec<&str> = lines
            .cells(line, text, header.names.len())?
            .into_iter()
            .map(str::trim)
            .collect();
        let name = lines.name(line, "Name", cells[name_col])?;
        if let Some(previous) = seen.insert(name.clone(), line) {
            return Err(lines.err(
                line,
                Some("Name"),
                format!("QOS `{name}` is already listed on line {previous}"),
            ));
        }
        let priority = match priority_col.map(|c| cells[c]).filter(|p| !p.is_empty()) {
            None => None,
            Some(text) => Some(text.parse::<u32>().map(i64::from).map_err(|_| {
                lines.err(
                    line,
                    Some("Priority"),
                    format!("`{text}` is not an integer from 0 to 4294967295"),
                )
            })?),
        };
        let usage_factor = match factor_col.map(|c| cells[c]).filter(|f| !f.is_empty()) {
            None => None,
            Some(text) => Some(
                text.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| {
                        lines.err(
                            line,
                            Some("UsageFactor"),
                            format!("`{text}` is not a number >= 0"),
                        )
                    })?,
            ),
        };
        ops.push(Op::Qos {
            name,
            priority,
            usage_factor,
        });
    }
    Ok(ops)
}

const SQUEUE_FIELDS: [&str; 10] = [
    "JobID",
    "User",
    "Account",
    "Partition",
    "QOS",
    "SubmitTime",
    "CPUs",
    "Nodes",
    "TimeLimit",
    "EligibleTime",
];

/// A partition or QOS cell: one name or a comma-separated list of names
/// (each checked, none empty), kept as written.
fn name_list(lines: &Lines, line: u64, field: &str, text: &str) -> Result<String, ImportError> {
    for name in text.split(',') {
        lines.name(line, field, name)?;
    }
    Ok(text.to_string())
}

/// A time limit as squeue prints it: Slurm's duration (`30:00`,
/// `1:00:00`, `2-00:00:00`), or none (`UNLIMITED`, `NOT_SET`, ...).
pub(crate) fn time_limit_secs(text: &str) -> Result<Option<u64>, String> {
    match text.to_ascii_uppercase().as_str() {
        "UNLIMITED" | "INFINITE" | "NOT_SET" | "N/A" | "" => Ok(None),
        _ => parse_slurm_duration_secs(text)
            .map(|secs| Some(secs.unsigned_abs()))
            .map_err(|e| e.reason),
    }
}

/// `submit` operations from `squeue`, in submit-time order (stable), after
/// a `partition` / `qos` event for each name of a partition or QOS list.
fn read_queue(source: Source<'_>, tree: &Associations, t: Time) -> Result<Vec<Op>, ImportError> {
    let lines = Lines { source };
    let mut jobs: Vec<(Time, Op)> = Vec::new();
    let mut listed_partitions: BTreeSet<String> = BTreeSet::new();
    let mut listed_qos: BTreeSet<String> = BTreeSet::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for (line, text) in lines.rows() {
        let f = lines.fields_from(line, text, &SQUEUE_FIELDS, SQUEUE_FIELDS.len() - 1)?;
        let job = lines.name(line, "JobID", f[0])?;
        let user = lines.name(line, "User", f[1])?;
        let account = lines.name(line, "Account", f[2])?;
        lines.check_job(line, tree, &mut seen, (&job, &user, &account))?;
        let partition = match f[3] {
            "" => None,
            p => Some(name_list(&lines, line, "Partition", p)?),
        };
        let qos = match f[4] {
            "" | "(null)" => None,
            q => Some(name_list(&lines, line, "QOS", q)?),
        };
        for (list, names) in [
            (&partition, &mut listed_partitions),
            (&qos, &mut listed_qos),
        ] {
            if let Some(list) = list.as_deref().filter(|l| is_list(l)) {
                names.extend(list.split(',').map(str::to_string));
            }
        }
        let submitted = parse_site_time(f[5])
            .map_err(|reason| lines.err(line, Some("SubmitTime"), reason))?
            .ok_or_else(|| {
                lines.err(line, Some("SubmitTime"), "a pending job has a submit time")
            })?;
        if submitted > t {
            return Err(lines.err(
                line,
                Some("SubmitTime"),
                format!("`{}` is after the import's time {t} (--time)", f[5]),
            ));
        }
        // Slurm's eligible time is its begin time; before the job is
        // eligible (a dependency, a hold) squeue prints `Unknown`, and
        // Slurm's age is 0: the job's age starts at `t`.
        let begin = match f.get(9) {
            None => None,
            Some(text) => Some(
                parse_site_time(text)
                    .map_err(|reason| lines.err(line, Some("EligibleTime"), reason))?
                    .unwrap_or(t),
            ),
        };
        let count = |field: &str, text: &str| -> Result<u64, ImportError> {
            text.parse::<u64>().map_err(|_| {
                lines.err(
                    line,
                    Some(field),
                    format!("`{text}` is not an integer >= 0"),
                )
            })
        };
        let cpus = count("CPUs", f[6])?;
        let nodes = count("Nodes", f[7])?;
        let time_limit_secs =
            time_limit_secs(f[8]).map_err(|reason| lines.err(line, Some("TimeLimit"), reason))?;
        let mut tres = TresCounts::new();
        tres.insert("cpu".to_string(), cpus as f64);
        tres.insert("node".to_string(), nodes as f64);
        let spec = JobSpec {
            partition,
            qos,
            tres: Some(tres),
            time_limit_secs,
            begin,
            ..JobSpec::default()
        };
        jobs.push((
            submitted,
            Op::Submit {
                job,
                user,
                account,
                spec,
                submitted: Some(submitted),
            },
        ));
    }
    jobs.sort_by_key(|(submitted, _)| *submitted);
    let mut ops: Vec<Op> = listed_partitions
        .into_iter()
        .map(|name| Op::Partition {
            name,
            priority_job_factor: None,
            tres_billing_weights: None,
            priority: None,
            tres: None,
            max_time_secs: None,
            priority_tier: None,
        })
        .collect();
    ops.extend(listed_qos.into_iter().map(|name| Op::Qos {
        name,
        priority: None,
        usage_factor: None,
    }));
    ops.extend(jobs.into_iter().map(|(_, op)| op));
    Ok(ops)
}

/// Convert Slurm's outputs to events, all at `input.t`, in an order the
/// validator accepts (see the module documentation).
pub fn import_slurm(input: &SlurmImport<'_>) -> Result<Vec<Event>, ImportError> {
    let tree = read_associations(input.assoc, input.cluster)?;
    let usage = input
        .sshare
        .map(|source| read_usage(source, &tree))
        .transpose()?;
    let config = input.slurm_conf.map(read_slurm_conf).transpose()?;
    let queue = input
        .squeue
        .map(|source| read_queue(source, &tree, input.t))
        .transpose()?;
    let qos = input.qos.map(read_qos).transpose()?;
    let cluster = match (input.nodes, input.slurm_conf) {
        (Some(source), _) => Some(nodes::from_scontrol_nodes(&Lines { source })?),
        (None, Some(source)) => nodes::from_slurm_conf(&Lines { source })?,
        (None, None) => None,
    };
    let history = match (input.sacct, input.sshare) {
        (Some(source), Some(_)) => {
            return Err(Lines { source }.err(
                1,
                None,
                "give the usage as sshare's RawUsage or as sacct's jobs, not both",
            ))
        }
        (Some(source), None) => sacct::read_sacct(source, &tree, input.t)?,
        (None, _) => Vec::new(),
    };

    let t = input.t;
    // The tree, configuration, cluster and QOS exist from before the first
    // job of the history (all at `t` without one).
    let t0 = history.first().map_or(t, |(first, _)| *first);
    let mut ops: Vec<Op> = Vec::new();
    for name in accounts_parents_first(&tree, input.assoc)? {
        let row = &tree.accounts[&name];
        ops.push(Op::Account {
            name,
            parent: Some(row.parent.clone()),
            shares: Some(row.shares),
            priority: None,
        });
    }
    for (account, user, _, shares) in &tree.users {
        ops.push(Op::User {
            user: user.clone(),
            account: account.clone(),
            shares: Some(*shares),
            priority: None,
        });
    }
    for ((account, user), amount) in usage.into_iter().flatten() {
        if amount > 0.0 {
            ops.push(Op::Usage {
                account,
                user,
                amount,
                period: None,
            });
        }
    }
    if let Some(set) = config.filter(|set| !set.is_empty()) {
        ops.push(Op::Config { set });
    }
    if let Some(size) = cluster {
        ops.push(Op::Cluster {
            nodes: size.nodes,
            tres: size.tres(),
        });
    }
    let defined_qos: BTreeSet<String> = qos
        .iter()
        .flatten()
        .filter_map(|op| match op {
            Op::Qos { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    ops.extend(qos.into_iter().flatten());
    let mut events: Vec<Event> = ops.into_iter().map(|op| Event { t: t0, op }).collect();
    events.extend(history.into_iter().map(|(t, op)| Event { t, op }));
    // A QOS list's names are defined (with no attributes) by the queue's
    // reader; the ones `sacctmgr show qos` defined already need no second.
    events.extend(
        queue
            .into_iter()
            .flatten()
            .filter(|op| {
                !matches!(op, Op::Qos { name, priority: None, usage_factor: None } if defined_qos.contains(name))
            })
            .map(|op| Event { t, op }),
    );
    // The log's time is the import's: usage is as of `t`.
    if events.last().is_some_and(|last| last.t < t) {
        events.push(Event { t, op: Op::Tick });
    }
    // What the log's reader would refuse (a RawUsage beyond 2^50, ...) is
    // refused here, by the same check.
    crate::check::check_events(&events).map_err(|(index, r)| ImportError {
        file: "the import".into(),
        line: index as u64 + 1,
        field: r.field,
        reason: format!(
            "event {} of the import is out of bounds: {}",
            index + 1,
            r.reason
        ),
    })?;
    Ok(events)
}

pub(crate) mod nodes;
mod sacct;

#[cfg(test)]
mod tests;
