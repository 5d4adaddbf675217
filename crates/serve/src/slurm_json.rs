//! The fair-share table in the shape Slurm's own JSON has: what
//! `sshare --json` and slurmrestd's `GET /slurm/v0.0.46/shares` write, from
//! data_parser v0.0.46 (the newest in Slurm's source, 26.11 development
//! head), `src/plugins/data_parser/v0.0.46/parsers.c`: the response
//! `OPENAPI_SHARES_RESP` (`shares`, `meta`, `errors`, `warnings`),
//! `SHARES_RESP_MSG` (`shares`, `total_shares`) and one
//! `ASSOC_SHARES_OBJ_WRAP` per row, with the `*_NO_VAL` numbers as
//! `{"set", "infinite", "number"}` objects and `type` as a flag list.
//!
//! # How a row maps
//! - `id`: the row's place in sshare's tree order, root 1 (fairflow keeps no
//!   association ids); `cluster`: [`CLUSTER_NAME`]; `partition`: `""`.
//! - `name`/`parent`: a user row's user and account; an account row's
//!   account and parent account (root's parent `""`), as
//!   `assoc_mgr_get_shares` fills them.
//! - `shares`: RawShares; `FairShare=parent` is Slurm's
//!   `SLURMDB_FS_USE_PARENT`, the number 2147483647; root unset (`NO_VAL`).
//! - `shares_normalized`, `usage_normalized`, `effective_usage`,
//!   `fairshare.factor`: the table's cells, unset where a cell is empty.
//! - `fairshare.level`: LevelFS; a `FairShare=parent` user's is infinite
//!   (`INFINITY` in Slurm), a `parent` account's and root's unset (`NO_VAL`).
//! - `usage`: RawUsage; `tres`: the TRES lists, `cpu` only: `run_seconds`
//!   0, `group_minutes` unset (no limit), `usage` the row's raw usage.
//! - `total_shares`: 0, as every Slurm writes it (`tot_shares` is packed
//!   but never set by slurmctld).
//! - `meta`: data_parser `v0.0.46`, fairflow's name and version as the
//!   plugin, `sshare` as the command; `errors` and `warnings` empty.

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Shares;
use serde_json::{json, Value};

/// The newest data_parser version in Slurm's source, in the route and `meta`.
pub const DATA_PARSER_VERSION: &str = "v0.0.46";

/// slurmrestd's path of the shares, with [`DATA_PARSER_VERSION`].
pub const SHARES_PATH: &str = "/slurm/v0.0.46/shares";

/// The `cluster` of every row (fairflow models one cluster).
pub const CLUSTER_NAME: &str = "fairflow";

/// Slurm's `SLURMDB_FS_USE_PARENT`, the raw shares of `FairShare=parent`.
pub const SLURMDB_FS_USE_PARENT: u32 = 0x7FFF_FFFF;

/// A `FLOAT64_NO_VAL`/`UINT32_NO_VAL`/`UINT64_NO_VAL` value: set, unset or
/// infinite.
fn no_val(value: Option<Value>, infinite: bool) -> Value {
    match (value, infinite) {
        (_, true) => json!({"set": false, "infinite": true, "number": 0}),
        (Some(number), false) => json!({"set": true, "infinite": false, "number": number}),
        (None, false) => json!({"set": false, "infinite": false, "number": 0}),
    }
}

/// A `FLOAT64_NO_VAL` from an `f64` cell (`inf` is infinite, NaN unset).
fn float_no_val(value: Option<f64>) -> Value {
    match value {
        Some(v) if v.is_infinite() => no_val(None, true),
        Some(v) if v.is_nan() => no_val(None, false),
        Some(v) => no_val(Some(json!(v)), false),
        None => no_val(None, false),
    }
}

/// The parent account name of each row (`""` for root).
fn parents(table: &FairshareTable) -> Vec<String> {
    // Tree order: the last account row seen at each depth is the parent of
    // the next row one level deeper.
    let mut open: Vec<String> = Vec::new();
    table
        .rows
        .iter()
        .map(|row| {
            if row.user.is_some() {
                return row.account.clone();
            }
            open.truncate(row.depth);
            let parent = open.last().cloned().unwrap_or_default();
            open.push(row.account.clone());
            parent
        })
        .collect()
}

/// One `ASSOC_SHARES_OBJ_WRAP`.
fn share(index: usize, row: &FairshareRow, parent: String) -> Value {
    let is_parent = row.raw_shares == Some(Shares::Parent);
    let shares = match row.raw_shares {
        None => no_val(None, false),
        Some(Shares::Parent) => no_val(Some(json!(SLURMDB_FS_USE_PARENT)), false),
        Some(Shares::Value(v)) => no_val(Some(json!(v)), false),
    };
    let level = if is_parent && row.user.is_some() {
        no_val(None, true)
    } else {
        float_no_val(row.level_fs)
    };
    let (name, kind) = match &row.user {
        Some(user) => (user.clone(), "USER"),
        None => (row.account.clone(), "ASSOCIATION"),
    };
    json!({
        "id": index + 1,
        "cluster": CLUSTER_NAME,
        "name": name,
        "parent": parent,
        "partition": "",
        "shares_normalized": float_no_val(row.norm_shares),
        "shares": shares,
        "tres": {
            "run_seconds": [{"name": "cpu", "value": no_val(Some(json!(0)), false)}],
            "group_minutes": [{"name": "cpu", "value": no_val(None, false)}],
            "usage": [{"name": "cpu", "value": row.raw_usage}],
        },
        "effective_usage": float_no_val(row.effective_usage),
        "usage_normalized": float_no_val(row.norm_usage),
        "usage": row.raw_usage,
        "fairshare": {
            "factor": float_no_val(row.fairshare),
            "level": level,
        },
        "type": [kind],
    })
}

/// The whole `OPENAPI_SHARES_RESP`, pretty-printed, with a final newline.
pub fn render_shares(table: &FairshareTable) -> String {
    let parents = parents(table);
    let shares: Vec<Value> = table
        .rows
        .iter()
        .zip(parents)
        .enumerate()
        .map(|(index, (row, parent))| share(index, row, parent))
        .collect();
    let response = json!({
        "shares": {
            "shares": shares,
            "total_shares": 0,
        },
        "meta": {
            "plugin": {
                "type": "",
                "name": "fairflow",
                "data_parser": format!("data_parser/{DATA_PARSER_VERSION}"),
                "accounting_storage": "",
            },
            "client": {"source": "", "user": "", "group": ""},
            "command": ["sshare"],
            "slurm": {
                "version": {"major": "", "micro": "", "minor": ""},
                "release": concat!("fairflow ", env!("CARGO_PKG_VERSION")),
                "cluster": CLUSTER_NAME,
            },
        },
        "errors": [],
        "warnings": [],
    });
    let mut text = serde_json::to_string_pretty(&response).expect("plain values always serialize");
    text.push('\n');
    text
}
