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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use fairflow_model::report::{FairshareRow, FairshareTable};
    use fairflow_model::{Algorithm, Shares};
    use serde_json::Value;

    use super::render_shares;

    /// The fields of one share, read from Slurm's
    /// `src/plugins/data_parser/v0.0.46/parsers.c`,
    /// `PARSER_ARRAY(ASSOC_SHARES_OBJ_WRAP)` (`add_parse`/`add_cparse` paths;
    /// a `/` nests), `add_skip`ped fields left out.
    const SHARE_FIELDS: [&str; 16] = [
        "id",
        "cluster",
        "name",
        "parent",
        "partition",
        "shares_normalized",
        "shares",
        "tres/run_seconds",
        "tres/group_minutes",
        "effective_usage",
        "usage_normalized",
        "usage",
        "tres/usage",
        "fairshare/factor",
        "fairshare/level",
        "type",
    ];
    /// `PARSER_ARRAY(SHARES_RESP_MSG)`.
    const RESP_MSG_FIELDS: [&str; 2] = ["shares", "total_shares"];
    /// `add_openapi_response_single(OPENAPI_SHARES_RESP, ..., "shares", ...)`
    /// with the meta, errors and warnings every response has.
    const RESPONSE_FIELDS: [&str; 4] = ["shares", "meta", "errors", "warnings"];
    /// `PARSER_ARRAY(OPENAPI_META)`.
    const META_FIELDS: [&str; 13] = [
        "plugin/type",
        "plugin/name",
        "plugin/data_parser",
        "plugin/accounting_storage",
        "client/source",
        "client/user",
        "client/group",
        "command",
        "slurm/version/major",
        "slurm/version/micro",
        "slurm/version/minor",
        "slurm/release",
        "slurm/cluster",
    ];
    /// `PARSER_ARRAY(FLOAT64_NO_VAL_STRUCT)` (and the `UINT32`/`UINT64` ones).
    const NO_VAL_FIELDS: [&str; 3] = ["set", "infinite", "number"];
    /// `PARSER_ARRAY(SHARES_UINT64_TRES)` / `SHARES_FLOAT128_TRES`.
    const TRES_FIELDS: [&str; 2] = ["name", "value"];

    /// Every leaf path of a JSON object (`a/b`), arrays and scalars as leaves.
    fn paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}/{key}")
                    };
                    if inner.is_object() && !is_no_val(inner) {
                        paths(inner, &path, out);
                    } else {
                        out.insert(path);
                    }
                }
            }
            _ => {
                out.insert(prefix.to_string());
            }
        }
    }

    fn is_no_val(value: &Value) -> bool {
        keys(value) == set(&NO_VAL_FIELDS)
    }

    fn keys(value: &Value) -> BTreeSet<String> {
        value
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn set(fields: &[&str]) -> BTreeSet<String> {
        fields.iter().map(|f| f.to_string()).collect()
    }

    /// Root, an account, a `FairShare=parent` user and a plain user.
    fn table() -> FairshareTable {
        let mut root = FairshareRow::new("root", None, 0);
        root.norm_shares = Some(0.0);
        root.raw_usage = 240;
        root.effective_usage = Some(1.0);
        let mut a = FairshareRow::new("a", None, 1);
        a.raw_shares = Some(Shares::Value(40));
        a.norm_shares = Some(0.4);
        a.raw_usage = 108;
        a.norm_usage = Some(0.45);
        a.effective_usage = Some(0.45);
        a.level_fs = Some(0.4 / 0.45);
        let mut p = FairshareRow::new("a", Some("p"), 2);
        p.raw_shares = Some(Shares::Parent);
        p.norm_shares = Some(0.4);
        p.norm_usage = Some(0.0);
        p.effective_usage = Some(0.0);
        p.fairshare = Some(1.0);
        let mut u = FairshareRow::new("a", Some("u"), 2);
        u.raw_shares = Some(Shares::Value(1));
        u.norm_shares = Some(0.5);
        u.raw_usage = 108;
        u.norm_usage = Some(0.45);
        u.effective_usage = Some(1.0);
        u.fairshare = Some(0.5);
        u.level_fs = Some(0.5);
        FairshareTable {
            algorithm: Algorithm::FairTree,
            as_of: 0,
            rows: vec![root, a, p, u],
        }
    }

    #[test]
    fn the_shape_is_data_parser_v0_0_46s() {
        let json: Value = serde_json::from_str(&render_shares(&table())).unwrap();
        assert_eq!(keys(&json), set(&RESPONSE_FIELDS));
        assert_eq!(keys(&json["shares"]), set(&RESP_MSG_FIELDS));
        assert_eq!(json["shares"]["total_shares"], 0);
        let mut meta = BTreeSet::new();
        paths(&json["meta"], "", &mut meta);
        assert_eq!(meta, set(&META_FIELDS));
        assert_eq!(json["errors"], Value::Array(vec![]));
        assert_eq!(json["warnings"], Value::Array(vec![]));
        let shares = json["shares"]["shares"].as_array().unwrap();
        assert_eq!(shares.len(), 4);
        for share in shares {
            let mut fields = BTreeSet::new();
            paths(share, "", &mut fields);
            assert_eq!(fields, set(&SHARE_FIELDS), "{share}");
            for list in ["run_seconds", "group_minutes", "usage"] {
                for entry in share["tres"][list].as_array().unwrap() {
                    assert_eq!(keys(entry), set(&TRES_FIELDS));
                }
            }
            for no_val in [
                &share["shares_normalized"],
                &share["shares"],
                &share["effective_usage"],
                &share["usage_normalized"],
                &share["fairshare"]["factor"],
                &share["fairshare"]["level"],
            ] {
                assert!(is_no_val(no_val), "{no_val}");
            }
        }
    }

    #[test]
    fn rows_map_as_assoc_mgr_get_shares_fills_them() {
        let json: Value = serde_json::from_str(&render_shares(&table())).unwrap();
        let shares = json["shares"]["shares"].as_array().unwrap();
        let unset = serde_json::json!({"set": false, "infinite": false, "number": 0});
        let infinite = serde_json::json!({"set": false, "infinite": true, "number": 0});
        // Root: no parent, shares NO_VAL, usage_normalized and the
        // fair-share values unset, effective usage 1.
        assert_eq!(shares[0]["name"], "root");
        assert_eq!(shares[0]["parent"], "");
        assert_eq!(shares[0]["shares"], unset);
        assert_eq!(shares[0]["usage_normalized"], unset);
        assert_eq!(shares[0]["effective_usage"]["number"], 1.0);
        assert_eq!(shares[0]["usage"], 240);
        assert_eq!(shares[0]["type"], serde_json::json!(["ASSOCIATION"]));
        // The account: its parent is root; shares 40 set.
        assert_eq!(shares[1]["name"], "a");
        assert_eq!(shares[1]["parent"], "root");
        assert_eq!(
            shares[1]["shares"],
            serde_json::json!({"set": true, "infinite": false, "number": 40})
        );
        // A `parent` user: name the user, parent its account, shares
        // SLURMDB_FS_USE_PARENT (0x7FFFFFFF), level infinite.
        assert_eq!(shares[2]["name"], "p");
        assert_eq!(shares[2]["parent"], "a");
        assert_eq!(shares[2]["shares"]["number"], 2_147_483_647u64);
        assert_eq!(shares[2]["fairshare"]["level"], infinite);
        assert_eq!(shares[2]["type"], serde_json::json!(["USER"]));
        // A plain user: factor and level set.
        assert_eq!(shares[3]["fairshare"]["factor"]["number"], 0.5);
        assert_eq!(shares[3]["fairshare"]["level"]["set"], true);
        assert_eq!(shares[3]["id"], 4);
    }
}
