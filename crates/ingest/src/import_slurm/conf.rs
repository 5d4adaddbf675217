//! `slurm.conf`'s priority parameters (the `config` event) and `sacctmgr
//! show qos` (the `qos` events).

use std::collections::BTreeMap;

use fairflow_model::event::Op;
use fairflow_model::Config;
use serde_json::Value;

use super::text::Lines;
use super::{ImportError, Source};
use crate::slurm_conf::priority_lines;

/// Parameters of `slurm.conf` that exist in Slurm but do not change
/// fair-share or priorities; they are left out of the `config` event.
pub(super) const IGNORED_SLURM_PARAMETERS: [&str; 4] = [
    "prioritytype",
    "priorityparameters",
    "prioritysitefactorplugin",
    "prioritysitefactorparameters",
];

/// The `set` of the one `config` event, from `slurm.conf`'s priority lines.
pub(super) fn read_slurm_conf(source: Source<'_>) -> Result<BTreeMap<String, Value>, ImportError> {
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
pub(super) fn read_qos(source: Source<'_>) -> Result<Vec<Op>, ImportError> {
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
