//! flux-accounting v0.60's fair-share emulator output (`flux account
//! fairshare-emulate -i FILE`, `fairshare_emulator.py`'s `format_results`):
//! one line per association, `Username`, `Bank`, `Shares`, `Usage`,
//! `FairShare`, as a table (each column as wide as its widest cell,
//! left-aligned, ` | ` between, a `-+-` rule), `-P` (`|`-separated, no
//! header, usage not rounded) or `--json` (an array of objects, two-space
//! indent). `fairflow view-bank --emulate-format` prints it from fairflow's
//! bank tree.
//!
//! # Order and numbers
//! The emulator lists the users in its walk's order, which is fair-share
//! descending; users of equal fair-share come as its sort leaves them: by
//! their weight (`(shares / siblings' shares) / (usage / siblings' usage)`,
//! 2^64 + 1 for no usage, 0 for no shares) as floating point, where two
//! weights equal in exact arithmetic may differ in the last bit, then by
//! their bank's weight, then in the tree's order (fairflow's, by name;
//! flux-accounting's is insertion). This module computes those weights from
//! the tree's shares and usage the same way, so the order is the emulator's.
//! Fair-share is rounded to 6 decimals and written as Python writes a float
//! (`1.0`); usage as Python writes what the emulator read: a whole number
//! without a fraction (the JSON inputs of flux-accounting's tests have whole
//! usages; `export-db -F` writes `10.0`, which the emulator prints as such),
//! otherwise as a float, rounded to 2 decimals in the table.

use fairflow_model::Shares;
use serde::Serialize;
use serde_json::Value;

use super::{python_float, round_to, BankTreeRow};

/// The emulator's three output forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmulateFormat {
    /// The default table.
    Table,
    /// `-P`: `username|bank|shares|usage|fairshare`.
    Parsable,
    /// `--json`.
    Json,
}

/// Why there is nothing to print.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmulateOutputError {
    /// No bank of that name in the tree.
    #[error("bank {0} not found")]
    NoBank(String),
    /// The bank has no association under it (the emulator's "no users found
    /// in input").
    #[error("no users found under bank {0}")]
    NoUsers(String),
}

/// One association as the emulator prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulatedUser {
    /// `username`.
    pub username: String,
    /// `bank`.
    pub bank: String,
    /// `shares` (`None`: none known, printed 1 as `view-bank` does).
    pub shares: Option<Shares>,
    /// `usage`.
    pub usage: f64,
    /// `fairshare` (not rounded).
    pub fairshare: f64,
}

/// The emulator's weight of a node among its siblings: `shares` over their
/// shares, against `usage` over their usage, in floating point as
/// `fairshare_emulator.py` computes it.
fn emulator_weight(shares: u64, usage: f64, siblings_shares: u64, siblings_usage: f64) -> f64 {
    /// The emulator's weight of a node without usage: `MAX_UINT64 + 1.0`.
    const NO_USAGE_WEIGHT: f64 = u64::MAX as f64 + 1.0;
    if shares == 0 {
        0.0
    } else if usage.abs() < 1e-9 {
        NO_USAGE_WEIGHT
    } else {
        (shares as f64 / siblings_shares as f64) / (usage / siblings_usage)
    }
}

fn raw_shares(row: &BankTreeRow) -> u64 {
    match row.shares {
        Some(Shares::Value(n)) => u64::from(n),
        _ => 0,
    }
}

/// Every row's weight among its siblings (the top row's: 0), and every
/// row's parent (`None` for rows at depth 0).
fn weights(rows: &[BankTreeRow]) -> (Vec<f64>, Vec<Option<usize>>) {
    let mut parents = vec![None; rows.len()];
    // The last bank row seen at each depth.
    let mut banks_by_depth: Vec<usize> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        banks_by_depth.truncate(row.depth);
        parents[i] = row
            .depth
            .checked_sub(1)
            .and_then(|d| banks_by_depth.get(d).copied());
        if row.user.is_none() {
            banks_by_depth.push(i);
        }
    }
    let mut sums = vec![(0u64, 0.0f64); rows.len()];
    for (i, parent) in parents.iter().enumerate() {
        if let Some(p) = parent {
            sums[*p].0 = sums[*p].0.saturating_add(raw_shares(&rows[i]));
            sums[*p].1 += rows[i].usage;
        }
    }
    let weights = rows
        .iter()
        .zip(&parents)
        .map(|(row, parent)| match parent {
            Some(p) => emulator_weight(raw_shares(row), row.usage, sums[*p].0, sums[*p].1),
            None => 0.0,
        })
        .collect();
    (weights, parents)
}

/// The associations under `bank` in the emulator's order (module doc).
pub fn emulated_users(
    rows: &[BankTreeRow],
    bank: &str,
) -> Result<Vec<EmulatedUser>, EmulateOutputError> {
    let start = rows
        .iter()
        .position(|r| r.user.is_none() && r.bank == bank)
        .ok_or_else(|| EmulateOutputError::NoBank(bank.to_string()))?;
    let end = start
        + 1
        + rows[start + 1..]
            .iter()
            .take_while(|r| r.depth > rows[start].depth)
            .count();
    let (weights, parents) = weights(rows);
    let fairshare = |i: usize| rows[i].fairshare.unwrap_or(0.0);
    let bank_weight = |i: usize| parents[i].map_or(0.0, |p| weights[p]);
    let mut users: Vec<usize> = (start..end).filter(|&i| rows[i].user.is_some()).collect();
    if users.is_empty() {
        return Err(EmulateOutputError::NoUsers(bank.to_string()));
    }
    users.sort_by(|&a, &b| {
        fairshare(b)
            .total_cmp(&fairshare(a))
            .then(weights[b].total_cmp(&weights[a]))
            .then(bank_weight(b).total_cmp(&bank_weight(a)))
            .then(a.cmp(&b))
    });
    Ok(users
        .into_iter()
        .map(|i| EmulatedUser {
            username: rows[i].user.clone().unwrap_or_default(),
            bank: rows[i].bank.clone(),
            shares: rows[i].shares,
            usage: rows[i].usage,
            fairshare: fairshare(i),
        })
        .collect())
}

/// A whole usage without a fraction (as Python prints the JSON's integer);
/// another as Python prints a float.
fn usage_text(usage: f64) -> String {
    if is_whole(usage) {
        format!("{}", usage as i64)
    } else {
        python_float(usage)
    }
}

fn is_whole(x: f64) -> bool {
    x.fract() == 0.0 && x.abs() < 9.0e15
}

fn shares_text(shares: Option<Shares>) -> String {
    shares.map_or_else(|| "1".to_string(), |s| s.to_string())
}

/// One `--json` element, keys in the emulator's order.
#[derive(Serialize)]
struct JsonUser<'a> {
    username: &'a str,
    bank: &'a str,
    shares: Value,
    usage: Value,
    fairshare: f64,
}

/// The users in one of the emulator's forms, ending with a newline as its
/// `print` does.
pub fn render_emulate(users: &[EmulatedUser], format: EmulateFormat) -> String {
    let fairshare_text = |u: &EmulatedUser| python_float(round_to(u.fairshare, 6));
    match format {
        EmulateFormat::Parsable => {
            let lines: Vec<String> = users
                .iter()
                .map(|u| {
                    format!(
                        "{}|{}|{}|{}|{}",
                        u.username,
                        u.bank,
                        shares_text(u.shares),
                        usage_text(u.usage),
                        fairshare_text(u)
                    )
                })
                .collect();
            lines.join("\n") + "\n"
        }
        EmulateFormat::Json => {
            let elements: Vec<JsonUser<'_>> = users
                .iter()
                .map(|u| JsonUser {
                    username: &u.username,
                    bank: &u.bank,
                    shares: match u.shares {
                        Some(Shares::Value(n)) => Value::from(n),
                        None => Value::from(1),
                        Some(other) => Value::from(other.to_string()),
                    },
                    usage: if is_whole(u.usage) {
                        Value::from(u.usage as i64)
                    } else {
                        Value::from(u.usage)
                    },
                    fairshare: round_to(u.fairshare, 6),
                })
                .collect();
            serde_json::to_string_pretty(&elements).unwrap_or_default() + "\n"
        }
        EmulateFormat::Table => {
            let cells: Vec<[String; 5]> = users
                .iter()
                .map(|u| {
                    let usage = if is_whole(u.usage) {
                        usage_text(u.usage)
                    } else {
                        python_float(round_to(u.usage, 2))
                    };
                    [
                        u.username.clone(),
                        u.bank.clone(),
                        shares_text(u.shares),
                        usage,
                        fairshare_text(u),
                    ]
                })
                .collect();
            render_table(&cells)
        }
    }
}

/// `format_results`'s table: widths from the header and every cell, each
/// cell padded on the right.
fn render_table(cells: &[[String; 5]]) -> String {
    let header = ["Username", "Bank", "Shares", "Usage", "FairShare"].map(str::to_string);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 5]| {
        row.iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let mut lines = vec![line(&header), rule.join("-+-")];
    lines.extend(cells.iter().map(line));
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests;
