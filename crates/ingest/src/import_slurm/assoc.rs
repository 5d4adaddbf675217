//! The association tree from `sacctmgr show assoc` (`-P`, or the
//! fixed-width table) or `sacctmgr dump`: [`read_associations`] reads the
//! rows of one cluster, checks that every parent and account is listed,
//! and [`accounts_parents_first`] orders the accounts for the log.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::Shares;

use super::text::{parse_shares, CellError, Lines};
use super::{ImportError, Source};
use crate::parse::MAX_SHARES;

#[derive(Debug)]
pub(super) struct AccountRow {
    pub(super) line: u64,
    pub(super) parent: String,
    pub(super) shares: Shares,
}

/// The association tree read from `sacctmgr`.
#[derive(Debug, Default)]
pub(super) struct Associations {
    /// Accounts (not root) by name, with their rows.
    pub(super) accounts: BTreeMap<String, AccountRow>,
    /// Accounts in input order.
    pub(super) account_order: Vec<String>,
    /// User associations `(account, user)` with their line and shares, in input order.
    pub(super) users: Vec<(String, String, u64, Shares)>,
    pub(super) user_lines: BTreeMap<(String, String), u64>,
}

impl Associations {
    pub(super) fn has_account(&self, name: &str) -> bool {
        name == "root" || self.accounts.contains_key(name)
    }
}

pub(super) const ASSOC_FIELDS: [&str; 5] = ["Cluster", "Account", "User", "Share", "ParentName"];

/// Is this first row `sacctmgr`'s header line (`-P` without `-n`)?
pub(super) fn is_assoc_header(text: &str) -> bool {
    let cells: Vec<&str> = text.split('|').map(str::trim).collect();
    ["Account", "User"]
        .iter()
        .all(|want| cells.iter().any(|c| c.eq_ignore_ascii_case(want)))
}

/// The association rows as `(line, [cluster, account, user, share, parent])`,
/// from either form: the headerless 5-column one, or `sacctmgr show assoc -P`
/// with its header (columns found by name; the parent of an account from
/// `ParentName`, or else from the `tree` option's indentation of `Account`).
pub(super) fn association_rows(lines: &Lines<'_>) -> Result<Vec<(u64, [String; 5])>, ImportError> {
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

/// Read the association tree of `cluster` (the only one listed when
/// `None`): each account and user association once, every parent and
/// every user's account listed.
pub(super) fn read_associations(
    source: Source<'_>,
    cluster: Option<&str>,
) -> Result<Associations, ImportError> {
    let lines = Lines { source };
    let mut tree = Associations::default();
    let mut first_cluster: Option<(String, u64)> = None;
    for (line, f) in association_rows(&lines)? {
        let f: Vec<&str> = f.iter().map(String::as_str).collect();
        if !keeps_cluster(&lines, cluster, &mut first_cluster, line, f[0])? {
            continue;
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
            tree.add_account(&lines, line, account, parent, shares)?;
        } else {
            let user = lines.name(line, "User", f[2])?;
            tree.add_user(&lines, line, account, user, shares)?;
        }
    }
    tree.check_listed(&lines)?;
    Ok(tree)
}

/// Is a row of cluster `row_cluster` read? With `--cluster`, only that
/// cluster's; without, every row must be of the first row's cluster.
fn keeps_cluster(
    lines: &Lines<'_>,
    cluster: Option<&str>,
    first_cluster: &mut Option<(String, u64)>,
    line: u64,
    row_cluster: &str,
) -> Result<bool, ImportError> {
    match cluster {
        Some(wanted) => Ok(wanted == row_cluster),
        None => match first_cluster {
            None => {
                *first_cluster = Some((row_cluster.to_string(), line));
                Ok(true)
            }
            Some((seen, seen_line)) if seen != row_cluster => Err(lines.err(
                line,
                Some("Cluster"),
                format!(
                    "cluster `{row_cluster}` differs from `{seen}` on line {seen_line}; \
                     choose one with --cluster"
                ),
            )),
            Some(_) => Ok(true),
        },
    }
}

impl Associations {
    /// Add account `account` (listed on `line`) under `parent`.
    fn add_account(
        &mut self,
        lines: &Lines<'_>,
        line: u64,
        account: String,
        parent: String,
        shares: Shares,
    ) -> Result<(), ImportError> {
        if parent == account {
            return Err(lines.err(
                line,
                Some("ParentName"),
                "an account cannot be its own parent",
            ));
        }
        if let Some(previous) = self.accounts.get(&account) {
            return Err(lines.err(
                line,
                Some("Account"),
                format!(
                    "account `{account}` is already listed on line {}",
                    previous.line
                ),
            ));
        }
        self.account_order.push(account.clone());
        self.accounts.insert(
            account,
            AccountRow {
                line,
                parent,
                shares,
            },
        );
        Ok(())
    }

    /// Add `user`'s association in `account` (listed on `line`).
    fn add_user(
        &mut self,
        lines: &Lines<'_>,
        line: u64,
        account: String,
        user: String,
        shares: Shares,
    ) -> Result<(), ImportError> {
        let key = (account.clone(), user.clone());
        if let Some(previous) = self.user_lines.get(&key) {
            return Err(lines.err(
                line,
                Some("User"),
                format!(
                    "user `{user}` in account `{account}` is already listed on line {previous} \
                     (per-partition associations are not supported)"
                ),
            ));
        }
        self.user_lines.insert(key, line);
        self.users.push((account, user, line, shares));
        Ok(())
    }

    /// Every parent and every user's account must be listed.
    fn check_listed(&self, lines: &Lines<'_>) -> Result<(), ImportError> {
        for name in &self.account_order {
            let row = &self.accounts[name];
            if !self.has_account(&row.parent) {
                return Err(lines.err(
                    row.line,
                    Some("ParentName"),
                    format!("parent account `{}` is not listed", row.parent),
                ));
            }
        }
        for (account, _, line, _) in &self.users {
            if !self.has_account(account) {
                return Err(lines.err(
                    *line,
                    Some("Account"),
                    format!("account `{account}` is not listed"),
                ));
            }
        }
        Ok(())
    }
}

/// A `sacctmgr dump` line's kind and the rest: `Kind - 'name':options`.
pub(super) fn dump_line(text: &str) -> Option<(&str, &str)> {
    let (kind, rest) = text.trim().split_once(" - ")?;
    ["Cluster", "Parent", "Account", "User"]
        .contains(&kind)
        .then_some((kind, rest))
}

/// Split a dump line's `'name':Opt=value:Opt='a:b'` at the colons outside
/// quotes, each piece with its quotes removed from the value.
pub(super) fn dump_fields(rest: &str) -> Result<Vec<String>, CellError> {
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
        return Err(CellError::OpenQuote);
    }
    pieces.push(piece);
    Ok(pieces)
}

/// `sacctmgr dump`'s `Fairshare` as the `Share` cell: Slurm writes the raw
/// value, `parent` as 2147483647 (`SLURMDB_FS_USE_PARENT`); the word itself
/// (as written by hand) is accepted too.
pub(super) fn dump_share(value: &str) -> String {
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
pub(super) fn dump_rows(lines: &Lines<'_>) -> Result<Vec<(u64, [String; 5])>, ImportError> {
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
pub(super) fn accounts_parents_first(
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
