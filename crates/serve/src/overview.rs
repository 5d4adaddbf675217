//! `GET /v1/overview`: what the live page shows of the fair-share table, from
//! one read of it: the accounts with the most raw usage (each with its
//! normalised shares, its share of the cluster's raw usage, its fair-share
//! factor and LevelFS) and the share tree as SVG. At 100,000 associations
//! the whole table as JSON is tens of megabytes; this answer stays a few
//! tens of kilobytes.

use fairflow_model::report::FairshareTable;
use serde_json::{json, Value};

use crate::format::json_f64;

/// The overview as JSON: `as_of`, `algorithm`, `accounts` (the `limit`
/// accounts, `root` excepted, with the most raw usage, ties by name: each
/// `account`, `norm_shares`, `raw_usage`, `usage_share` (its raw usage over
/// root's; `null` when root has none), `fairshare`, `level_fs`), and
/// `tree_svg`.
pub fn render(table: &FairshareTable, limit: usize, tree_svg: &str) -> String {
    let root_usage = table.rows.first().map_or(0, |r| r.raw_usage);
    let mut accounts: Vec<_> = table
        .rows
        .iter()
        .filter(|r| r.user.is_none() && r.depth > 0)
        .collect();
    accounts.sort_by(|a, b| {
        b.raw_usage
            .cmp(&a.raw_usage)
            .then_with(|| a.account.cmp(&b.account))
    });
    let accounts: Vec<Value> = accounts
        .into_iter()
        .take(limit)
        .map(|r| {
            json!({
                "account": r.account,
                "norm_shares": json_f64(r.norm_shares),
                "raw_usage": r.raw_usage,
                "usage_share": json_f64((root_usage > 0).then(|| r.raw_usage as f64 / root_usage as f64)),
                "fairshare": json_f64(r.fairshare),
                "level_fs": json_f64(r.level_fs),
            })
        })
        .collect();
    let overview = json!({
        "as_of": table.as_of,
        "algorithm": table.algorithm.name(),
        "accounts": accounts,
        "tree_svg": tree_svg,
    });
    serde_json::to_string(&overview).expect("plain values always serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairflow_model::report::FairshareRow;
    use fairflow_model::Algorithm;

    fn row(account: &str, user: Option<&str>, depth: usize, usage: u64) -> FairshareRow {
        let mut r = FairshareRow::new(account, user, depth);
        r.raw_usage = usage;
        r.norm_shares = (depth > 0).then_some(0.5);
        r
    }

    /// root 400 = A 100 (user a1) + B 300 (user b1) + C 0: by usage B (0.75),
    /// A (0.25), then C (0); users left out; a limit of 2 keeps B and A.
    #[test]
    fn accounts_by_usage_with_their_share_of_it() {
        let table = FairshareTable {
            algorithm: Algorithm::FairTree,
            as_of: 2000,
            rows: vec![
                row("root", None, 0, 400),
                row("A", None, 1, 100),
                row("A", Some("a1"), 2, 100),
                row("B", None, 1, 300),
                row("B", Some("b1"), 2, 300),
                row("C", None, 1, 0),
            ],
        };
        let all: Value = serde_json::from_str(&render(&table, 10, "<svg/>")).unwrap();
        let names: Vec<&str> = all["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["account"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["B", "A", "C"]);
        assert_eq!(all["accounts"][0]["usage_share"], 0.75);
        assert_eq!(all["accounts"][1]["usage_share"], 0.25);
        assert_eq!(all["accounts"][2]["usage_share"], 0.0);
        assert_eq!(all["tree_svg"], "<svg/>");
        assert_eq!(all["as_of"], 2000);
        let two: Value = serde_json::from_str(&render(&table, 2, "")).unwrap();
        assert_eq!(two["accounts"].as_array().unwrap().len(), 2);
    }
}
