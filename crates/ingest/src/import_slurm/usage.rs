//! Usage from `sshare -a -l -P`'s `RawUsage`: each association's own
//! usage (an account's row holds its subtree's, less its children's).

use std::collections::BTreeMap;

use super::assoc::Associations;
use super::text::Lines;
use super::{ImportError, Source};

/// An association: `(account, None)` for an account, `(account, Some(user))`
/// for a user association.
pub(crate) type AssocKey = (String, Option<String>);

/// Own usage per association from `sshare`, in its row order.
pub(super) fn read_usage(
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
