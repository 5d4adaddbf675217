//! Slurm's own raw usage per association, from `scontrol show assoc_mgr
//! flags=assoc` (one RPC; `UsageRaw` with two decimals in 22.05, more in
//! later releases), for the follower's reconciliation: fairflow's usage is
//! brought to Slurm's once per decay pass.

use std::collections::BTreeMap;

use super::command::CommandError;
use crate::import_slurm::{check_name, own_usage, AssocKey};

/// Raw (subtree) usage per association, in the order listed; `root`'s row
/// is left out (it is the sum of the rest).
pub fn read_assoc_usage(command: &str, text: &str) -> Result<Vec<(AssocKey, f64)>, CommandError> {
    let mut rows: Vec<(AssocKey, f64)> = Vec::new();
    let mut current: Option<(u64, AssocKey)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index as u64 + 1;
        let err = |reason: String| CommandError::new(command, Some(line), reason);
        let text = raw.trim();
        if text.starts_with("ClusterName=") {
            if let Some((open, _)) = &current {
                return Err(CommandError::new(
                    command,
                    Some(*open),
                    "an association without a `UsageRaw/Norm/Efctv=` line",
                ));
            }
            let mut account = None;
            let mut user = None;
            for (key, value) in crate::import_slurm::nodes::pairs(text) {
                match key {
                    "Account" => account = Some(value),
                    // `UserName=alice(1001)`: the name before the uid.
                    "UserName" => user = Some(value.split('(').next().unwrap_or("")),
                    _ => {}
                }
            }
            let account = account
                .filter(|a| check_name(a).is_ok())
                .ok_or_else(|| err("field `Account`: missing or not a name".into()))?;
            let user = match user {
                None | Some("") => None,
                Some(u) => Some(
                    check_name(u)
                        .map(|()| u.to_string())
                        .map_err(|r| err(format!("field `UserName`: {r}")))?,
                ),
            };
            current = Some((line, (account.to_string(), user)));
        } else if let Some(values) = text.strip_prefix("UsageRaw/Norm/Efctv=") {
            let Some((_, key)) = current.take() else {
                return Err(err("a `UsageRaw` line outside an association".into()));
            };
            let first = values.split('/').next().unwrap_or("");
            let usage = first
                .parse::<f64>()
                .ok()
                .filter(|u| u.is_finite() && *u >= 0.0)
                .ok_or_else(|| err(format!("field `UsageRaw`: `{first}` is not a number >= 0")))?;
            if key != ("root".to_string(), None) {
                rows.push((key, usage));
            }
        }
    }
    if let Some((open, _)) = current {
        return Err(CommandError::new(
            command,
            Some(open),
            "an association without a `UsageRaw/Norm/Efctv=` line",
        ));
    }
    Ok(rows)
}

/// Own usage per association (a user association's raw usage; an account's
/// raw usage less its children's), from raw usage and the accounts' parents.
pub fn own_assoc_usage(
    raw: Vec<(AssocKey, f64)>,
    parents: &BTreeMap<String, String>,
) -> Vec<(AssocKey, f64)> {
    own_usage(raw, |account| parents.get(account).cloned())
}
