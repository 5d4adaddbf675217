//! The fair-share families of the Prometheus exporters sites already run
//! (`serve --metrics-names slurm-exporter`), under their names, labels and
//! help texts, with the values each derives from `sshare`'s output, here
//! taken from fairflow's fair-share table (the rows `sshare -a -l` renders),
//! so the dashboards written for them read fairflow unchanged:
//!
//! - SckyzO/slurm_exporter (`internal/collector/fairshare.go`: `sshare -a -P
//!   -n -o Account,User,RawShares,NormShares,RawUsage,NormUsage,FairShare`):
//!   `slurm_account_fairshare`, `slurm_account_fairshare_raw_shares`,
//!   `_norm_shares`, `_raw_usage_cpu_seconds`, `_norm_usage` `{account}` of
//!   every account row, and `slurm_user_fairshare` with the same five
//!   suffixes `{account, user}` of the user rows; rows whose RawShares is
//!   `parent` are skipped; an empty cell is 0 (Go's `ParseFloat` error
//!   ignored), so an account's FairShare, which sshare prints for user rows
//!   only, is 0 (as on Slurm). Its switch `--collector.fairshare.user-metrics`
//!   is [`UserSeries`].
//! - vpenso/prometheus-slurm-exporter (`sshare.go`: `sshare -n -P -o
//!   account,fairshare`): `slurm_account_fairshare{account}`, the same
//!   FairShare cell of root and the top-level accounts: SckyzO's series are a
//!   superset with the same values.
//! - guilbaults/prometheus-slurm-exporter (`sshare.go`: `sshare -n -P -o
//!   account,NormUsage,NormShares,LevelFS`): `slurm_account_normusage`,
//!   `slurm_account_normshares`, `slurm_account_levelfs` `{account}` of the
//!   account rows indented less than two spaces (root and the top-level
//!   accounts) with NormUsage > 0 and NormShares > 0 ("only show active
//!   accounts").
//! - rivosinc/prometheus-slurm-exporter (`exporter/fairshare.go`: `sshare -n
//!   -P -o Account,NormShares`) writes NormShares under the name
//!   `slurm_account_fairshare`: fairflow follows vpenso's and SckyzO's
//!   meaning of that name (FairShare); NormShares is
//!   `slurm_account_fairshare_norm_shares`.
//!
//! An infinite value is written as the largest finite `f64`, as fairflow's
//! own families (`metrics::scraped`).

use std::str::FromStr;

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Shares;

use super::openmetrics::GaugeFamily;
use super::{finite, rows_by_usage};

/// `serve --metrics-names`: which names `/metrics` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MetricsNames {
    /// fairflow's own families only.
    #[default]
    #[value(name = "fairflow")]
    Fairflow,
    /// fairflow's own, and the exporters' fair-share families.
    #[value(name = "slurm-exporter")]
    SlurmExporter,
}

/// `serve --metrics-exporter-users`: the user associations of the
/// exporters' `slurm_user_fairshare*` families (SckyzO's
/// `--collector.fairshare.user-metrics`, on by default there too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UserSeries {
    /// None (`none`).
    Off,
    /// Every user association (`all`).
    #[default]
    All,
    /// The N with the most raw usage (ties by account, then user).
    Most(usize),
}

/// A `--metrics-exporter-users` value that is not one (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is neither `none`, `all` nor a number of user associations")]
pub struct NotUserSeries(String);

impl FromStr for UserSeries {
    type Err = NotUserSeries;

    fn from_str(text: &str) -> Result<Self, NotUserSeries> {
        match text.to_ascii_lowercase().as_str() {
            "none" => Ok(UserSeries::Off),
            "all" => Ok(UserSeries::All),
            _ => text
                .parse()
                .map(UserSeries::Most)
                .map_err(|_| NotUserSeries(text.to_string())),
        }
    }
}

/// The user rows of `table` the user families write, by `series`.
pub(crate) fn user_rows(table: &FairshareTable, series: UserSeries) -> Vec<usize> {
    let limit = match series {
        UserSeries::Off => return Vec::new(),
        UserSeries::All => usize::MAX,
        UserSeries::Most(n) => n,
    };
    let user_row = |row: &FairshareRow| row.user.is_some() && !parent_shares(row);
    rows_by_usage(table, user_row, limit)
}

/// Is the row's RawShares cell `parent` (SckyzO skips such rows)?
fn parent_shares(row: &FairshareRow) -> bool {
    row.raw_shares == Some(Shares::Parent)
}

/// A cell as the exporters read it: empty is 0.
fn cell(value: Option<f64>) -> f64 {
    value.map_or(0.0, finite)
}

/// A family's value of a row.
type RowValue = fn(&FairshareRow) -> f64;

/// A family's name and help.
type Named = (&'static str, &'static str);

/// SckyzO's five values of a row, the same for accounts and users: FairShare,
/// RawShares, NormShares, RawUsage, NormUsage.
const SCKYZO_VALUES: [RowValue; 5] = [
    |row| cell(row.fairshare),
    raw_shares,
    |row| cell(row.norm_shares),
    |row| row.raw_usage as f64,
    |row| cell(row.norm_usage),
];

/// SckyzO's account families, in [`SCKYZO_VALUES`] order.
const SCKYZO_ACCOUNT: [Named; 5] = [
    (
        "slurm_account_fairshare",
        "FairShare factor for account (0=lowest priority, 1=highest)",
    ),
    (
        "slurm_account_fairshare_raw_shares",
        "Raw shares allocated to account",
    ),
    (
        "slurm_account_fairshare_norm_shares",
        "Normalized shares for account (fraction of total shares)",
    ),
    (
        "slurm_account_fairshare_raw_usage_cpu_seconds",
        "Raw CPU-seconds usage for account (decay-weighted)",
    ),
    (
        "slurm_account_fairshare_norm_usage",
        "Normalized usage for account (fraction of total usage)",
    ),
];

/// SckyzO's user families, in [`SCKYZO_VALUES`] order.
const SCKYZO_USER: [Named; 5] = [
    ("slurm_user_fairshare", "FairShare factor for user"),
    ("slurm_user_fairshare_raw_shares", "Raw shares for user"),
    (
        "slurm_user_fairshare_norm_shares",
        "Normalized shares for user",
    ),
    (
        "slurm_user_fairshare_raw_usage_cpu_seconds",
        "Raw CPU-seconds usage for user (decay-weighted)",
    ),
    (
        "slurm_user_fairshare_norm_usage",
        "Normalized usage for user",
    ),
];

/// guilbaults' families: NormUsage, NormShares, LevelFS.
const GUILBAULTS_ACCOUNT: [(&str, &str, RowValue); 3] = [
    ("slurm_account_normusage", "NormUsage for account", |row| {
        cell(row.norm_usage)
    }),
    (
        "slurm_account_normshares",
        "NormShares for account",
        |row| cell(row.norm_shares),
    ),
    ("slurm_account_levelfs", "LevelFS for account", |row| {
        cell(row.level_fs)
    }),
];

/// The RawShares cell: root's is empty (0).
fn raw_shares(row: &FairshareRow) -> f64 {
    match row.raw_shares {
        Some(Shares::Value(shares)) => f64::from(shares),
        Some(Shares::Parent) | None => 0.0,
    }
}

/// An account row guilbaults' exporter reports: indented less than two
/// spaces (root and the top-level accounts), NormUsage > 0, NormShares > 0.
fn guilbaults_row(row: &FairshareRow) -> bool {
    row.user.is_none() && row.depth < 2 && cell(row.norm_usage) > 0.0 && cell(row.norm_shares) > 0.0
}

/// Every exporter family of `table`: the account rows in table order, then
/// `users` (user rows, from [`user_rows`]).
pub(crate) fn write_families(out: &mut String, table: &FairshareTable, users: &[usize]) {
    let rows = &table.rows;
    let account_row = |row: &&FairshareRow| row.user.is_none() && !parent_shares(row);
    for ((name, help), value) in SCKYZO_ACCOUNT.into_iter().zip(SCKYZO_VALUES) {
        let mut family = GaugeFamily::open(out, name, help);
        for row in rows.iter().filter(account_row) {
            family.sample(&[("account", &row.account)], value(row));
        }
        family.close();
    }
    for ((name, help), value) in SCKYZO_USER.into_iter().zip(SCKYZO_VALUES) {
        let mut family = GaugeFamily::open(out, name, help);
        for &index in users {
            let row = &rows[index];
            let user = row.user.as_deref().unwrap_or("");
            family.sample(&[("account", &row.account), ("user", user)], value(row));
        }
        family.close();
    }
    for (name, help, value) in GUILBAULTS_ACCOUNT {
        let mut family = GaugeFamily::open(out, name, help);
        for row in rows.iter().filter(|row| guilbaults_row(row)) {
            family.sample(&[("account", &row.account)], value(row));
        }
        family.close();
    }
}
