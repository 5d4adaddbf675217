//! `fairflow import flux --emulate FILE.json`: flux-accounting v0.60's
//! fair-share emulator input (what `flux account fairshare-emulate -i FILE`
//! reads and `flux account export-db -F` writes; `fairshare_emulator.py`'s
//! `parse_json_input`) read to the same rows as the database's, then to
//! events by the same rules (`super::tree`).
//!
//! # The format
//! One object with the key `root`, a bank node. A node is an object with
//! - `bank` (a bank) or `username` (an association of the bank it is in),
//!   a name fairflow's log accepts;
//! - `shares`: a whole number from 0 to fairflow's largest (default 1, as the
//!   emulator's);
//! - `usage`: a number of at least 0 (default 0);
//! - `children`: a bank's sub-banks and users, in any order (`export-db -F`
//!   writes the users first).
//!
//! Anything else (another key, a user with children, a node with both names,
//! a second association of a user in one bank, two banks of one name) is an
//! error naming the JSON path (`root.children[1].shares`) and the reason;
//! nothing is imported then.
//!
//! # What it becomes
//! What `import flux --db` makes of the same tree (`super`'s doc): a
//! `config` event with the Flux models and flux-accounting's default decay,
//! an `account` event per bank (no priority: the format has none), a `user`
//! event per association in a bank without sub-banks (one in a bank with
//! sub-banks is left out and counted in the notes, as the database's are),
//! and each association's `usage` in bin 0. A bank's own `usage` is not
//! imported: fairflow's bank usage is its members' sum; a bank whose `usage`
//! is not that sum is counted in the notes (the emulator weighs such a bank
//! by its own `usage`, so its fair-shares may differ). No user ids, hence
//! no journal: [`FluxDb::users`] and [`FluxDb::queues`] are empty.

use std::collections::BTreeMap;
use std::path::Path;

use fairflow_model::{Shares, Time};
use serde_json::{Map, Value};

use super::rows::{check_name, shares_of, usage_of, RowErrors, ValueError};
use super::tree::{AssocRow, BankRow, Bins};
use super::{assemble, settings, tree, FluxDb, FluxImportError};

/// The largest emulator input read (a hierarchy of a million associations
/// is about 100 MB of `export-db -F`'s JSON).
pub const MAX_EMULATE_INPUT_BYTES: u64 = 256 << 20;

/// The keys a node may have.
const NODE_KEYS: &str = "bank or username, shares, usage, children";

/// The emulator input read from the file at `path`, as events at time `t`.
pub fn read_flux_emulate(path: &Path, t: Time) -> Result<FluxDb, FluxImportError> {
    let text = crate::files::read_small_text(path, MAX_EMULATE_INPUT_BYTES)?;
    parse_flux_emulate(&text, &path.display().to_string(), t)
}

/// The emulator input `text` (named `shown` in errors), as events at time
/// `t`.
pub fn parse_flux_emulate(text: &str, shown: &str, t: Time) -> Result<FluxDb, FluxImportError> {
    let document: Value = serde_json::from_str(text).map_err(|source| FluxImportError::Json {
        path: shown.to_string(),
        source,
    })?;
    let errors = JsonErrors { path: shown };
    let hierarchy = read_hierarchy(&errors, &document)?;
    let settings = settings::default_settings();
    let mut notes = Vec::new();
    let bank_tree = tree::bank_tree(&errors, &hierarchy.banks, t)?;
    let members = tree::members_of(
        &errors,
        &bank_tree,
        &hierarchy.assocs,
        &hierarchy.bins,
        t,
        &mut notes,
    )?;
    if hierarchy.banks_not_summed > 0 {
        notes.push(format!(
            "{} banks whose usage is not the sum of their children's: fairflow's bank usage is that sum",
            hierarchy.banks_not_summed
        ));
    }
    assemble(
        shown,
        t,
        settings,
        bank_tree,
        members,
        (Vec::new(), Default::default()),
        notes,
    )
}

/// The errors of one emulator input: a place is a JSON path.
struct JsonErrors<'a> {
    path: &'a str,
}

impl JsonErrors<'_> {
    fn at(&self, at: &str, reason: impl Into<String>) -> FluxImportError {
        FluxImportError::Node {
            path: self.path.to_string(),
            at: at.to_string(),
            reason: reason.into(),
        }
    }
}

impl RowErrors for JsonErrors<'_> {
    /// A bank's or association's key is its node's JSON path; the column is
    /// the JSON key that holds the value (`parent_bank`: the node itself).
    fn row_error(
        &self,
        _table: &'static str,
        key: String,
        column: &'static str,
        reason: String,
    ) -> FluxImportError {
        match column {
            "bank" | "username" | "shares" => self.at(&format!("{key}.{column}"), reason),
            _ => self.at(&key, reason),
        }
    }
}

/// The rows of the hierarchy.
struct Hierarchy {
    banks: Vec<BankRow>,
    assocs: Vec<AssocRow>,
    bins: Bins,
    /// Banks (not the root) whose `usage` is not their children's sum.
    banks_not_summed: usize,
}

/// One node read, before its children.
struct Node<'v> {
    name: String,
    is_user: bool,
    shares: Shares,
    usage: f64,
    children: &'v [Value],
}

/// Walk the document's nodes depth first (without recursion: any depth
/// serde_json parses is walked), each bank a [`BankRow`], each user an
/// [`AssocRow`] with its usage as bin 0.
fn read_hierarchy(errors: &JsonErrors<'_>, document: &Value) -> Result<Hierarchy, FluxImportError> {
    let root = top_level(errors, document)?;
    let mut out = Hierarchy {
        banks: Vec::new(),
        assocs: Vec::new(),
        bins: Bins::new(),
        banks_not_summed: 0,
    };
    // Per bank: its declared usage and its children's sum.
    let mut bank_usage: Vec<(f64, f64)> = Vec::new();
    // (node, its JSON path, its parent's index in `out.banks`)
    let mut stack: Vec<(&Value, String, Option<usize>)> = vec![(root, "root".to_string(), None)];
    let mut first_at: BTreeMap<(String, String), String> = BTreeMap::new();
    while let Some((value, at, parent)) = stack.pop() {
        let node = read_node(errors, value, &at)?;
        let parent_name = parent.map(|p| out.banks[p].name.clone());
        if let Some(p) = parent {
            bank_usage[p].1 += node.usage;
        }
        if node.is_user {
            let Some(bank) = parent_name else {
                return Err(errors.at(&at, "the root must be a bank (`bank`), not a user"));
            };
            if let Some(first) = first_at.insert((node.name.clone(), bank.clone()), at.clone()) {
                return Err(errors.at(
                    &format!("{at}.username"),
                    format!(
                        "a second association of `{}` in bank `{bank}` (the first is {first})",
                        node.name
                    ),
                ));
            }
            out.bins
                .insert((node.name.clone(), bank.clone()), vec![(0, node.usage)]);
            out.assocs.push(AssocRow {
                key: at,
                username: node.name,
                userid: None,
                bank,
                default_bank: String::new(),
                shares: node.shares,
                usage: node.usage,
                active: true,
            });
            continue;
        }
        let index = out.banks.len();
        out.banks.push(BankRow {
            key: at.clone(),
            name: node.name,
            active: true,
            parent: parent_name.unwrap_or_default(),
            shares: node.shares,
            priority: None,
        });
        bank_usage.push((node.usage, 0.0));
        for (i, child) in node.children.iter().enumerate().rev() {
            stack.push((child, format!("{at}.children[{i}]"), Some(index)));
        }
    }
    out.banks_not_summed = bank_usage
        .iter()
        .zip(&out.banks)
        .filter(|((declared, sum), bank)| {
            !bank.parent.is_empty() && (declared - sum).abs() > 1e-6 * declared.abs().max(1.0)
        })
        .count();
    Ok(out)
}

/// The document's `root` node: the document must be an object with that
/// key only.
fn top_level<'v>(
    errors: &JsonErrors<'_>,
    document: &'v Value,
) -> Result<&'v Value, FluxImportError> {
    let object = document.as_object().ok_or_else(|| {
        errors.at(
            "the document",
            format!(
                "must be an object with the key `root`, not {}",
                kind(document)
            ),
        )
    })?;
    if let Some(key) = object.keys().find(|k| *k != "root") {
        return Err(errors.at(key, "is not a key of the document (only `root`)"));
    }
    object
        .get("root")
        .ok_or_else(|| errors.at("the document", "has no key `root`"))
}

/// One node's name, kind, shares, usage and children, each checked.
fn read_node<'v>(
    errors: &JsonErrors<'_>,
    value: &'v Value,
    at: &str,
) -> Result<Node<'v>, FluxImportError> {
    let object: &Map<String, Value> = value.as_object().ok_or_else(|| {
        errors.at(
            at,
            format!("must be an object (a node), not {}", kind(value)),
        )
    })?;
    if let Some(key) = object.keys().find(|k| {
        !matches!(
            k.as_str(),
            "bank" | "username" | "shares" | "usage" | "children"
        )
    }) {
        return Err(errors.at(
            &format!("{at}.{key}"),
            format!("is not a key of a node ({NODE_KEYS})"),
        ));
    }
    let (name_key, is_user) = match (object.contains_key("bank"), object.contains_key("username")) {
        (true, true) => return Err(errors.at(at, "has both `bank` and `username`")),
        (false, false) => {
            return Err(errors.at(at, "has neither `bank` nor `username` (a bank or a user)"))
        }
        (true, false) => ("bank", false),
        (false, true) => ("username", true),
    };
    let field = |key: &str| format!("{at}.{key}");
    let name = match &object[name_key] {
        Value::String(name) => {
            check_name(name).map_err(|reason| errors.at(&field(name_key), reason.to_string()))?;
            name.clone()
        }
        other => {
            return Err(errors.at(
                &field(name_key),
                format!("must be a string, not {}", kind(other)),
            ))
        }
    };
    let shares = match object.get("shares") {
        None => Shares::Value(1),
        Some(value) => whole_number(value)
            .and_then(shares_of)
            .map_err(|reason| errors.at(&field("shares"), reason.to_string()))?,
    };
    let usage = match object.get("usage") {
        None => 0.0,
        Some(Value::Number(n)) => n
            .as_f64()
            .ok_or_else(|| ValueError::UnreadableNumber(n.clone()))
            .and_then(usage_of)
            .map_err(|reason| errors.at(&field("usage"), reason.to_string()))?,
        Some(other) => {
            return Err(errors.at(
                &field("usage"),
                format!("must be a number, not {}", kind(other)),
            ))
        }
    };
    let children: &[Value] = match object.get("children") {
        None => &[],
        Some(Value::Array(children)) if is_user && !children.is_empty() => {
            return Err(errors.at(&field("children"), "a user (`username`) has no children"))
        }
        Some(Value::Array(children)) => children,
        Some(other) => {
            return Err(errors.at(
                &field("children"),
                format!("must be an array, not {}", kind(other)),
            ))
        }
    };
    Ok(Node {
        name,
        is_user,
        shares,
        usage,
        children,
    })
}

/// A JSON number that is a whole number (`10` or `10.0`).
fn whole_number(value: &Value) -> Result<i64, ValueError> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| ValueError::NotWholeNumber(n.clone())),
        other => Err(ValueError::NotNumber(kind(other))),
    }
}

/// What a JSON value is, for a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
