//! What one read of the fair-share table gives `/metrics` (the per-association
//! families, opt-in): the rows each family writes, chosen once per read, and
//! those families written straight from the table's rows into the exposition
//! (`metrics::openmetrics`), with no copy of a row, no label `String` and no
//! metric object per cell.
//!
//! fairflow's own families (`--metrics-associations N|all`):
//! `fairflow_association_fairshare`, `_level_fs`, `_raw_usage` and
//! `_effective_usage`, labelled `account` and `user` (`""` on an account's
//! row), for the `N` associations with the most raw usage (ties by account,
//! then user), written in that order; a row without a value (sshare's empty
//! cell) has no sample; an infinite value (LevelFS of an association without
//! usage) is written as the largest finite `f64`, 1.7976931348623157e308, as
//! prometheus-slurm-exporter maps slurmrestd's `Infinity`/`inf`
//! (`util.CleanseInfinity`; its users' issue #8: a non-finite value broke
//! their parsers). `fairflow_fairness_error{account}`: the `N` accounts with
//! the largest level error in absolute value (`fairflow_serve::audit`).
//! The exporters' families (`--metrics-names slurm-exporter`) are
//! `metrics::exporter`'s.

use std::sync::Arc;

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Time;
use fairflow_serve::audit;

use super::exporter::{self, MetricsNames, UserSeries};
use super::openmetrics::GaugeFamily;
use super::{finite, rows_by_usage};

/// Which per-association families a scrape writes (serve's flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScrapeSettings {
    /// `--metrics-associations`: fairflow's own per-association families
    /// for this many associations, the most raw usage first; `None`: none.
    pub associations: Option<usize>,
    /// `--metrics-names`: with `slurm-exporter`, the exporters' fair-share
    /// families too.
    pub names: MetricsNames,
    /// `--metrics-exporter-users`: the user associations of the exporters'
    /// `slurm_user_fairshare*` families.
    pub exporter_users: UserSeries,
}

impl ScrapeSettings {
    /// Does a scrape read the fair-share table at all?
    pub fn reads_table(&self) -> bool {
        self.associations.is_some() || self.names == MetricsNames::SlurmExporter
    }
}

/// The rows one read of the fair-share table gives the per-association
/// families, chosen by [`ScrapeSettings`]; written by
/// [`ScrapedRows::write_associations`] and [`ScrapedRows::write_exporter`].
#[derive(Debug)]
pub struct ScrapedRows {
    table: Arc<FairshareTable>,
    /// The rows of fairflow's own families, in their order.
    associations: Vec<usize>,
    /// `(account, level error)`, largest first in absolute value.
    fairness_errors: Vec<(String, f64)>,
    /// The user rows of the exporters' families, in their order; `None`
    /// without `--metrics-names slurm-exporter`.
    exporter_users: Option<Vec<usize>>,
}

/// fairflow's own per-association families: name, help (with the period
/// the registry adds to its families' help), and the value of a row
/// (`None`: no sample).
type RowGauge = (&'static str, &'static str, fn(&FairshareRow) -> Option<f64>);

const ASSOCIATION_FAMILIES: [RowGauge; 4] = [
    (
        "fairflow_association_fairshare",
        "sshare's FairShare of an association (opt-in: --metrics-associations).",
        |row| row.fairshare.map(finite),
    ),
    (
        "fairflow_association_level_fs",
        "sshare's LevelFS of an association (infinite: the largest finite f64).",
        |row| row.level_fs.map(finite),
    ),
    (
        "fairflow_association_raw_usage",
        "sshare's RawUsage of an association.",
        |row| Some(row.raw_usage as f64),
    ),
    (
        "fairflow_association_effective_usage",
        "sshare's EffectvUsage of an association.",
        |row| row.effective_usage.map(finite),
    ),
];

const FAIRNESS_ERROR_HELP: &str = "An account's usage share minus its shares among its siblings \
     (above 0: over-served; opt-in: the --metrics-associations accounts with the largest error).";

impl ScrapedRows {
    /// The rows `settings` asks of `table` (read at engine time `now`).
    pub fn select(table: Arc<FairshareTable>, now: Time, settings: &ScrapeSettings) -> Self {
        let (associations, fairness_errors) = match settings.associations {
            None => (Vec::new(), Vec::new()),
            Some(limit) => {
                let found = audit::audit(&table, Vec::new(), now);
                (
                    rows_by_usage(&table, |_| true, limit),
                    audit::account_errors(&found, limit),
                )
            }
        };
        let exporter_users = (settings.names == MetricsNames::SlurmExporter)
            .then(|| exporter::user_rows(&table, settings.exporter_users));
        ScrapedRows {
            table,
            associations,
            fairness_errors,
            exporter_users,
        }
    }

    /// About the bytes [`ScrapedRows::write_associations`] and
    /// [`ScrapedRows::write_exporter`] write (a little more): reserved
    /// before writing, so the text is not copied as it grows.
    pub fn text_bytes_hint(&self) -> usize {
        let rows = &self.table.rows;
        let labels = |index: usize| {
            let row = &rows[index];
            row.account.len() + row.user.as_deref().map_or(0, str::len)
        };
        // A sample's name, label names, quotes and value: under 96 bytes.
        const SAMPLE_BYTES: usize = 96;
        let own: usize = self
            .associations
            .iter()
            .map(|&i| labels(i) + SAMPLE_BYTES)
            .sum();
        let exporter = self.exporter_users.as_ref().map_or(0, |users| {
            let accounts: usize = (0..rows.len())
                .filter(|&i| rows[i].user.is_none())
                .map(|i| labels(i) + SAMPLE_BYTES)
                .sum();
            let users: usize = users.iter().map(|&i| labels(i) + SAMPLE_BYTES).sum();
            8 * accounts + 5 * users
        });
        4 * own + self.fairness_errors.len() * SAMPLE_BYTES + exporter
    }

    /// fairflow's own per-association families and `fairflow_fairness_error`
    /// (nothing without `--metrics-associations`).
    pub fn write_associations(&self, out: &mut String) {
        let rows = &self.table.rows;
        for (name, help, value) in ASSOCIATION_FAMILIES {
            let mut family = GaugeFamily::open(out, name, help);
            for &index in &self.associations {
                let row = &rows[index];
                if let Some(value) = value(row) {
                    let user = row.user.as_deref().unwrap_or("");
                    family.sample(&[("account", &row.account), ("user", user)], value);
                }
            }
            family.close();
        }
        let mut family = GaugeFamily::open(out, "fairflow_fairness_error", FAIRNESS_ERROR_HELP);
        for (account, error) in &self.fairness_errors {
            family.sample(&[("account", account)], *error);
        }
        family.close();
    }

    /// The exporters' fair-share families (nothing without `--metrics-names
    /// slurm-exporter`).
    pub fn write_exporter(&self, out: &mut String) {
        if let Some(users) = &self.exporter_users {
            exporter::write_families(out, &self.table, users);
        }
    }
}
