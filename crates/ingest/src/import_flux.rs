//! `fairflow import flux`: a flux-accounting database (SQLite, schema version
//! [`FLUX_DB_SCHEMA_VERSION`], flux-accounting v0.60's `create_db.py`) read to
//! an event log, so that a Flux site can load its banks, associations, queues,
//! weights, usage and configuration.
//!
//! # What is read, and what it becomes
//! - `PRAGMA user_version` must be [`FLUX_DB_SCHEMA_VERSION`]; another
//!   version is an error naming both numbers.
//! - `bank_table` (`bank`, `active`, `parent_bank`, `shares`, `priority`, in
//!   `bank_id` order): one `account` event per active bank, each after its
//!   parent (shares; `priority`, the bank priority factor, must be a whole
//!   number: fairflow's account priority is an integer). The bank with an
//!   empty `parent_bank` is the root: named `root`, it is fairflow's root;
//!   otherwise it is an account of that name under fairflow's root (a single
//!   child: every fair-share is the same). Inactive banks, the banks under
//!   them and their associations are left out, as flux-accounting's
//!   fair-share walk leaves them out.
//! - `association_table` (`username`, `userid`, `bank`, `default_bank`,
//!   `shares`, `job_usage`, `active`, in insertion order): one `user` event per
//!   active association. An association in a bank that has
//!   sub-banks is left out (flux-accounting's walk ignores it; its CLI refuses
//!   to create one), and said so in [`FluxDb::notes`]. The `userid` and
//!   `default_bank` columns map Flux's job events to associations
//!   ([`FluxDb::users`]; a user's default bank is the one on their last row, as
//!   the priority plugin loads them).
//! - `job_usage_per_association_table` (`username`, `bank`, `period`,
//!   `value`): each imported association's usage bins, one `usage` event with
//!   `period` per bin that is not 0 (`UsageModel=flux` keeps them as
//!   flux-accounting does). An association without rows there has its
//!   `job_usage` put in bin 0 (said in the notes, as is a `job_usage` that is
//!   not the sum of the bins: the bins are imported). A `period` beyond the
//!   `priority_usage_reset_period / priority_decay_half_life` bins is an error.
//! - `t_half_life_period_table` (`end_half_life_period` of the row
//!   `cluster='cluster'`, rounded to the second): `FluxHalfLifePeriodEnd`, the
//!   period clock; without the row the clock starts at the import's time.
//! - `queue_table` (`queue`, `priority`): one `partition` event per queue with
//!   its `priority` (the Flux model's queue priority).
//! - `priority_factor_weight_table` (`factor`, `weight`): the `FluxWeight*`
//!   parameters of the `config` event (`fairshare`, `queue`, `bank`,
//!   `urgency`).
//! - `config_table`: `priority_decay_half_life` (seconds, default a week)
//!   is `PriorityDecayHalfLife` (the bins' period), `priority_usage_reset_period`
//!   (default 4 weeks) `FluxUsageResetPeriod` (their span) and `decay_factor`
//!   (default 0.5) `FluxDecayFactor`. `node_weight`,
//!   `core_weight`, `gpu_weight` are `FluxNodeWeight`, `FluxCoreWeight`,
//!   `FluxGpuWeight` under `UsageModel=flux`.
//!   `deny_unknown_queues` is [`FluxDb::deny_unknown_queues`]. Other keys are
//!   ignored.
//!
//! The `config` event also sets `PriorityModel=flux` and `UsageModel=flux`.
//!
//! # Output
//! Every event at one time `t`: the `config` event, the accounts (each after
//! its parent), the user associations, the queues, then the usage.
//!
//! **Architecture invariant:** a malformed row is a [`FluxImportError::Row`]
//! naming the table, the row's key and the column; nothing here panics on
//! input, and nothing is written when an error is found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use fairflow_model::event::Op;
use fairflow_model::{Event, Shares, Time};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};
use serde_json::{json, Value};

use crate::parse::MAX_SHARES;

/// The flux-accounting schema version read (`DB_SCHEMA_VERSION`, v0.60).
pub const FLUX_DB_SCHEMA_VERSION: i64 = 38;

/// Why a flux-accounting database could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum FluxImportError {
    /// The path names no regular file (a FIFO would hang the open).
    #[error(transparent)]
    File(#[from] crate::IngestError),
    /// The file could not be opened or read as an SQLite database.
    #[error("{path}: cannot read the database: {source}")]
    Open {
        /// The database's path.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database has another schema version.
    #[error(
        "{path}: flux-accounting schema version {found} (PRAGMA user_version); fairflow reads version {expected} (flux-accounting v0.60); update the database with `flux account-update-db`"
    )]
    Version {
        /// The database's path.
        path: String,
        /// Its `user_version`.
        found: i64,
        /// [`FLUX_DB_SCHEMA_VERSION`].
        expected: i64,
    },
    /// A table could not be read (missing, or a column missing).
    #[error("{path}: cannot read {table}: {source}")]
    Table {
        /// The database's path.
        path: String,
        /// The table.
        table: &'static str,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// An event the database gives is beyond the bounds every event meets
    /// (`check`).
    #[error("{path}: event {} it gives is out of bounds: {rejection}", index + 1)]
    OutOfBounds {
        /// The database's path.
        path: String,
        /// The event's index among the database's events.
        index: usize,
        /// The field and why.
        rejection: crate::Rejection,
    },
    /// A row holds a value fairflow cannot use.
    #[error("{path}: {table} row {key}: column `{column}`: {reason}")]
    Row {
        /// The database's path.
        path: String,
        /// The table.
        table: &'static str,
        /// The row's key (`bank`, `username/bank`, `queue`, `factor`, `key`).
        key: String,
        /// The column at fault.
        column: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// One Flux user (a `userid`) as the job events need them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FluxUser {
    /// The user name (fairflow's `user`).
    pub username: String,
    /// The bank a job without one goes to.
    pub default_bank: String,
    /// The banks the user has an imported association in.
    pub banks: BTreeSet<String>,
}

/// A flux-accounting database, read.
#[derive(Debug, Clone)]
pub struct FluxDb {
    /// The events, all at the import's time.
    pub events: Vec<Event>,
    /// The users by Flux `userid`.
    pub users: BTreeMap<u32, FluxUser>,
    /// The queues of `queue_table`.
    pub queues: BTreeSet<String>,
    /// `config_table`'s `deny_unknown_queues`: a job to a queue not in
    /// `queue_table` is rejected.
    pub deny_unknown_queues: bool,
    /// What was read but not applied, for standard error.
    pub notes: Vec<String>,
}

/// The error of one row: the column and the reason.
type RowError = (&'static str, String);

fn type_name(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

/// The cells of one row, read by column index with the column's name for
/// errors.
struct Cells<'r, 's> {
    row: &'r Row<'s>,
}

impl Cells<'_, '_> {
    fn value(&self, index: usize, column: &'static str) -> Result<ValueRef<'_>, RowError> {
        self.row
            .get_ref(index)
            .map_err(|e| (column, format!("cannot be read: {e}")))
    }

    fn text(&self, index: usize, column: &'static str) -> Result<String, RowError> {
        match self.value(index, column)? {
            ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec())
                .map_err(|_| (column, "is not UTF-8 text".to_string())),
            other => Err((column, format!("must be text, not {}", type_name(other)))),
        }
    }

    /// Text, NULL read as empty.
    fn text_or_empty(&self, index: usize, column: &'static str) -> Result<String, RowError> {
        match self.value(index, column)? {
            ValueRef::Null => Ok(String::new()),
            _ => self.text(index, column),
        }
    }

    fn name(&self, index: usize, column: &'static str) -> Result<String, RowError> {
        let text = self.text(index, column)?;
        check_name(&text).map_err(|reason| (column, reason))?;
        Ok(text)
    }

    fn integer(&self, index: usize, column: &'static str) -> Result<i64, RowError> {
        match self.value(index, column)? {
            ValueRef::Integer(i) => Ok(i),
            ValueRef::Real(r) if r.fract() == 0.0 && r.abs() < 9.0e15 => Ok(r as i64),
            ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .ok_or_else(|| {
                    let shown = String::from_utf8_lossy(bytes);
                    (column, format!("`{shown}` is not an integer"))
                }),
            other => Err((
                column,
                format!("must be an integer, not {}", type_name(other)),
            )),
        }
    }

    fn real(&self, index: usize, column: &'static str) -> Result<f64, RowError> {
        let value = match self.value(index, column)? {
            ValueRef::Integer(i) => i as f64,
            ValueRef::Real(r) => r,
            other => {
                return Err((
                    column,
                    format!("must be a number, not {}", type_name(other)),
                ));
            }
        };
        if value.is_finite() {
            Ok(value)
        } else {
            Err((column, format!("{value} is not a finite number")))
        }
    }

    fn flag(&self, index: usize, column: &'static str) -> Result<bool, RowError> {
        match self.integer(index, column)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err((column, format!("{other} is not 0 or 1"))),
        }
    }

    fn shares(&self, index: usize, column: &'static str) -> Result<Shares, RowError> {
        let shares = self.integer(index, column)?;
        u32::try_from(shares)
            .ok()
            .filter(|s| u64::from(*s) <= MAX_SHARES)
            .map(Shares::Value)
            .ok_or_else(|| (column, format!("{shares} is not from 0 to {MAX_SHARES}")))
    }
}

/// The names fairflow's log accepts (as its parser does): not empty, at most
/// 256 bytes, no spaces, control characters, `|` or `,`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("must not be empty".into())
    } else if name.len() > 256 {
        Err("is longer than 256 bytes".into())
    } else if name
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '|' || c == ',')
    {
        Err(format!(
            "`{name}` contains a space, a control character, `|` or `,`"
        ))
    } else {
        Ok(())
    }
}

/// One open database and its path, for errors.
struct Db<'a> {
    path: &'a str,
    conn: Connection,
}

impl Db<'_> {
    /// Read every row of `sql` (from `table`) with `read`, which returns the
    /// row's key (for errors) and its value or the column at fault.
    fn rows<T>(
        &self,
        table: &'static str,
        sql: &str,
        mut read: impl FnMut(&Cells<'_, '_>) -> (String, Result<T, RowError>),
    ) -> Result<Vec<T>, FluxImportError> {
        let table_error = |source| FluxImportError::Table {
            path: self.path.to_string(),
            table,
            source,
        };
        let mut statement = self.conn.prepare(sql).map_err(table_error)?;
        let mut rows = statement.query([]).map_err(table_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(table_error)? {
            let (key, value) = read(&Cells { row });
            out.push(value.map_err(|(column, reason)| self.row_error(table, key, column, reason))?);
        }
        Ok(out)
    }

    fn row_error(
        &self,
        table: &'static str,
        key: String,
        column: &'static str,
        reason: String,
    ) -> FluxImportError {
        FluxImportError::Row {
            path: self.path.to_string(),
            table,
            key,
            column,
            reason,
        }
    }
}

/// A row's key cell as text for errors, whatever its type.
fn key_text(cells: &Cells<'_, '_>, index: usize) -> String {
    match cells.row.get_ref(index) {
        Ok(ValueRef::Text(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        Ok(ValueRef::Integer(i)) => i.to_string(),
        Ok(ValueRef::Real(r)) => r.to_string(),
        _ => "?".to_string(),
    }
}

struct BankRow {
    name: String,
    active: bool,
    parent: String,
    shares: Shares,
    priority: i64,
}

struct AssocRow {
    key: String,
    username: String,
    userid: u32,
    bank: String,
    default_bank: String,
    shares: Shares,
    usage: f64,
    active: bool,
}

/// Seconds as a Slurm duration (`D-HH:MM:SS`), which the configuration reads.
fn duration_text(secs: i64) -> String {
    format!(
        "{}-{:02}:{:02}:{:02}",
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// Read the flux-accounting database at `path` to events at time `t`.
pub fn read_flux_db(path: &Path, t: Time) -> Result<FluxDb, FluxImportError> {
    crate::files::require_regular_file(path)?;
    let shown = path.display().to_string();
    let open_error = |source| FluxImportError::Open {
        path: shown.clone(),
        source,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_error)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(open_error)?;
    if version != FLUX_DB_SCHEMA_VERSION {
        return Err(FluxImportError::Version {
            path: shown,
            found: version,
            expected: FLUX_DB_SCHEMA_VERSION,
        });
    }
    let db = Db { path: &shown, conn };
    let mut notes = Vec::new();

    // The configuration: weights, decay, usage weights.
    let mut set: BTreeMap<String, Value> = BTreeMap::new();
    set.insert("PriorityModel".into(), json!("flux"));
    set.insert("UsageModel".into(), json!("flux"));
    let factors = db.rows(
        "priority_factor_weight_table",
        "SELECT factor, weight FROM priority_factor_weight_table ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| {
                let factor = c.text(0, "factor")?;
                let weight = c.integer(1, "weight")?;
                let name = match factor.as_str() {
                    "fairshare" => "FluxWeightFairshare",
                    "queue" => "FluxWeightQueue",
                    "bank" => "FluxWeightBank",
                    "urgency" => "FluxWeightUrgency",
                    other => {
                        return Err((
                            "factor",
                            format!("`{other}` is not fairshare, queue, bank or urgency"),
                        ))
                    }
                };
                Ok((name, weight))
            })();
            (key, value)
        },
    )?;
    for (name, weight) in factors {
        set.insert(name.into(), json!(weight));
    }
    let config = db.rows(
        "config_table",
        "SELECT key, value FROM config_table ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| Ok((c.text(0, "key")?, c.text(1, "value")?)))();
            (key, value)
        },
    )?;
    let config: BTreeMap<String, String> = config.into_iter().collect();
    let config_number = |key: &str| -> Result<Option<f64>, FluxImportError> {
        let Some(text) = config.get(key) else {
            return Ok(None);
        };
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(Some)
            .ok_or_else(|| {
                db.row_error(
                    "config_table",
                    key.to_string(),
                    "value",
                    format!("`{text}` is not a number of at least 0"),
                )
            })
    };
    let positive_secs = |key: &str| -> Result<Option<i64>, FluxImportError> {
        match config_number(key)? {
            None => Ok(None),
            Some(v) if v >= 1.0 && v <= fairflow_model::limits::MAX_DURATION_SECS as f64 => {
                Ok(Some(v.round() as i64))
            }
            Some(v) => Err(db.row_error(
                "config_table",
                key.to_string(),
                "value",
                format!("{v} is not a positive number of seconds"),
            )),
        }
    };
    let half_life_secs = positive_secs("priority_decay_half_life")?.unwrap_or(604_800);
    let decay_factor = config_number("decay_factor")?.unwrap_or(0.5);
    if !(decay_factor > 0.0 && decay_factor < 1.0) {
        return Err(db.row_error(
            "config_table",
            "decay_factor".into(),
            "value",
            format!("{decay_factor} is not between 0 and 1"),
        ));
    }
    set.insert(
        "PriorityDecayHalfLife".into(),
        json!(duration_text(half_life_secs)),
    );
    set.insert("FluxDecayFactor".into(), json!(decay_factor));
    let reset_secs = positive_secs("priority_usage_reset_period")?.unwrap_or(4 * 604_800);
    set.insert(
        "FluxUsageResetPeriod".into(),
        json!(duration_text(reset_secs)),
    );
    let bin_count = fairflow_model::config::FluxUsageBins {
        reset_period_secs: reset_secs,
        ..Default::default()
    }
    .count(half_life_secs);
    let period_ends = db.rows(
        "t_half_life_period_table",
        "SELECT cluster, end_half_life_period FROM t_half_life_period_table \
         WHERE cluster = 'cluster' ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| {
                let end = c.real(1, "end_half_life_period")?;
                if !(0.0..=fairflow_model::limits::MAX_TIME as f64).contains(&end) {
                    return Err(("end_half_life_period", format!("{end} is not a Unix time")));
                }
                Ok(end.round() as i64)
            })();
            (key, value)
        },
    )?;
    if let Some(end) = period_ends.first() {
        set.insert("FluxHalfLifePeriodEnd".into(), json!(end));
    }
    for (key, name) in [
        ("node_weight", "FluxNodeWeight"),
        ("core_weight", "FluxCoreWeight"),
        ("gpu_weight", "FluxGpuWeight"),
    ] {
        if let Some(weight) = config_number(key)? {
            set.insert(name.into(), json!(weight));
        }
    }
    let deny_unknown_queues = match config.get("deny_unknown_queues").map(|v| v.trim()) {
        None | Some("false") | Some("False") | Some("0") => false,
        Some("true") | Some("True") | Some("1") => true,
        Some(other) => {
            return Err(db.row_error(
                "config_table",
                "deny_unknown_queues".into(),
                "value",
                format!("`{other}` is not true or false"),
            ))
        }
    };

    // Banks, each after its parent.
    let banks = db.rows(
        "bank_table",
        "SELECT bank, active, parent_bank, shares, priority FROM bank_table ORDER BY bank_id",
        |c| {
            let key = key_text(c, 0);
            let value = (|| {
                let priority = c.real(4, "priority")?;
                if priority.fract() != 0.0 || priority.abs() > 9.0e15 {
                    return Err((
                        "priority",
                        format!("{priority} is not a whole number (fairflow's bank priority is an integer)"),
                    ));
                }
                Ok(BankRow {
                    name: c.name(0, "bank")?,
                    active: c.flag(1, "active")?,
                    parent: c.text_or_empty(2, "parent_bank")?,
                    shares: c.shares(3, "shares")?,
                    priority: priority as i64,
                })
            })();
            (key, value)
        },
    )?;
    let all_banks: BTreeSet<&str> = banks.iter().map(|b| b.name.as_str()).collect();
    let mut active: BTreeMap<&str, &BankRow> = BTreeMap::new();
    let mut root: Option<&BankRow> = None;
    for bank in banks.iter().filter(|b| b.active) {
        if active.insert(&bank.name, bank).is_some() {
            return Err(db.row_error(
                "bank_table",
                bank.name.clone(),
                "bank",
                "a second active bank of this name".into(),
            ));
        }
        if bank.parent.is_empty() {
            if let Some(first) = root {
                return Err(db.row_error(
                    "bank_table",
                    bank.name.clone(),
                    "parent_bank",
                    format!(
                        "a second root bank (empty parent_bank) besides `{}`",
                        first.name
                    ),
                ));
            }
            root = Some(bank);
        } else if !all_banks.contains(bank.parent.as_str()) {
            return Err(db.row_error(
                "bank_table",
                bank.name.clone(),
                "parent_bank",
                format!("`{}` is not in bank_table", bank.parent),
            ));
        }
    }
    let Some(root) = root else {
        return Err(db.row_error(
            "bank_table",
            "(none)".into(),
            "parent_bank",
            "no active root bank (a bank whose parent_bank is empty)".into(),
        ));
    };
    let mut events = vec![Event {
        t,
        op: Op::Config { set },
    }];
    // fairflow's name of a flux bank: the root named `root` is fairflow's own.
    let mut imported: BTreeSet<String> = BTreeSet::new();
    let mut has_children: BTreeSet<String> = BTreeSet::new();
    imported.insert(root.name.clone());
    if root.name != "root" {
        events.push(account_event(t, root, "root"));
    }
    let mut frontier = vec![root.name.clone()];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for parent in &frontier {
            for bank in banks
                .iter()
                .filter(|b| b.active && &b.parent == parent && b.name != root.name)
            {
                if !imported.insert(bank.name.clone()) {
                    continue;
                }
                has_children.insert(parent.clone());
                events.push(account_event(t, bank, parent));
                next.push(bank.name.clone());
            }
        }
        frontier = next;
    }
    let left_out = active.len() - imported.len();
    if left_out > 0 {
        notes.push(format!(
            "{left_out} active banks under inactive ones left out"
        ));
    }

    // Associations.
    let assocs = db.rows(
        "association_table",
        "SELECT username, userid, bank, default_bank, shares, job_usage, active \
         FROM association_table ORDER BY rowid",
        |c| {
            let key = format!("{}/{}", key_text(c, 0), key_text(c, 2));
            let value = (|| {
                let userid = c.integer(1, "userid")?;
                Ok(AssocRow {
                    key: String::new(),
                    username: c.name(0, "username")?,
                    userid: u32::try_from(userid)
                        .map_err(|_| ("userid", format!("{userid} is not a user id")))?,
                    bank: c.name(2, "bank")?,
                    default_bank: c.text(3, "default_bank")?,
                    shares: c.shares(4, "shares")?,
                    usage: {
                        let usage = c.real(5, "job_usage")?;
                        if !(0.0..=fairflow_model::limits::MAX_USAGE_AMOUNT_TRES_SECS)
                            .contains(&usage)
                        {
                            return Err(("job_usage", format!("{usage} is not a usage")));
                        }
                        usage
                    },
                    active: c.flag(6, "active")?,
                })
            })();
            let value = value.map(|row| AssocRow {
                key: key.clone(),
                ..row
            });
            (key, value)
        },
    )?;
    // Usage bins, by (username, bank): (period, value).
    let bin_rows = db.rows(
        "job_usage_per_association_table",
        "SELECT username, bank, period, value FROM job_usage_per_association_table \
         ORDER BY username, bank, period",
        |c| {
            let key = format!("{}/{}/{}", key_text(c, 0), key_text(c, 1), key_text(c, 2));
            let value = (|| {
                let period = c.integer(2, "period")?;
                let period = usize::try_from(period)
                    .ok()
                    .filter(|p| *p < bin_count)
                    .ok_or_else(|| {
                        (
                            "period",
                            format!("{period} is not a bin from 0 to {}", bin_count - 1),
                        )
                    })?;
                let value = c.real(3, "value")?;
                if !(0.0..=fairflow_model::limits::MAX_USAGE_AMOUNT_TRES_SECS).contains(&value) {
                    return Err(("value", format!("{value} is not a usage")));
                }
                Ok((
                    (c.text(0, "username")?, c.text(1, "bank")?),
                    (period, value),
                ))
            })();
            (key, value)
        },
    )?;
    let mut bins: BTreeMap<(String, String), Vec<(usize, f64)>> = BTreeMap::new();
    for (key, bin) in bin_rows {
        bins.entry(key).or_default().push(bin);
    }
    let mut without_bins = 0usize;
    let mut bins_differ = 0usize;
    let mut users: BTreeMap<u32, FluxUser> = BTreeMap::new();
    let mut usage_events = Vec::new();
    let mut under_sub_banks = 0usize;
    for assoc in assocs.iter().filter(|a| a.active) {
        if !all_banks.contains(assoc.bank.as_str()) {
            return Err(db.row_error(
                "association_table",
                assoc.key.clone(),
                "bank",
                format!("`{}` is not in bank_table", assoc.bank),
            ));
        }
        if !imported.contains(&assoc.bank) {
            continue;
        }
        if has_children.contains(&assoc.bank) {
            under_sub_banks += 1;
            continue;
        }
        let account = assoc.bank.clone();
        events.push(Event {
            t,
            op: Op::User {
                user: assoc.username.clone(),
                account: account.clone(),
                shares: Some(assoc.shares),
                priority: None,
            },
        });
        // Its bins; without any, its job_usage in bin 0.
        let own_bins = match bins.get(&(assoc.username.clone(), assoc.bank.clone())) {
            Some(rows) => {
                let sum: f64 = rows.iter().map(|(_, v)| v).sum();
                if (sum - assoc.usage).abs() > 1e-6 * sum.abs().max(1.0) {
                    bins_differ += 1;
                }
                rows.clone()
            }
            None => {
                if assoc.usage > 0.0 {
                    without_bins += 1;
                }
                vec![(0, assoc.usage)]
            }
        };
        for (period, amount) in own_bins.into_iter().filter(|(_, v)| *v > 0.0) {
            usage_events.push(Event {
                t,
                op: Op::Usage {
                    account: account.clone(),
                    user: Some(assoc.username.clone()),
                    amount,
                    period: Some(period as u32),
                },
            });
        }
        let user = users.entry(assoc.userid).or_insert_with(|| FluxUser {
            username: assoc.username.clone(),
            default_bank: String::new(),
            banks: BTreeSet::new(),
        });
        if user.username != assoc.username {
            return Err(db.row_error(
                "association_table",
                assoc.key.clone(),
                "userid",
                format!(
                    "user id {} is also user `{}`'s",
                    assoc.userid, user.username
                ),
            ));
        }
        user.banks.insert(assoc.bank.clone());
        if !assoc.default_bank.is_empty() {
            user.default_bank = assoc.default_bank.clone();
        }
    }
    if without_bins > 0 {
        notes.push(format!(
            "{without_bins} associations with usage but no rows in job_usage_per_association_table: their job_usage is put in bin 0"
        ));
    }
    if bins_differ > 0 {
        notes.push(format!(
            "{bins_differ} associations whose job_usage is not the sum of their bins: the bins are imported"
        ));
    }
    if under_sub_banks > 0 {
        notes.push(format!(
            "{under_sub_banks} associations in banks that have sub-banks left out (flux-accounting's fair-share ignores them)"
        ));
    }

    // Queues.
    let queue_rows = db.rows(
        "queue_table",
        "SELECT queue, priority FROM queue_table ORDER BY rowid",
        |c| {
            let key = key_text(c, 0);
            let value = (|| Ok((c.name(0, "queue")?, c.integer(1, "priority")?)))();
            (key, value)
        },
    )?;
    let mut queues = BTreeSet::new();
    for (name, priority) in queue_rows {
        queues.insert(name.clone());
        events.push(Event {
            t,
            op: Op::Partition {
                name,
                priority_job_factor: None,
                tres_billing_weights: None,
                priority: Some(priority),
                tres: None,
                max_time_secs: None,
                priority_tier: None,
            },
        });
    }
    events.extend(usage_events);
    // What the log's reader would refuse is refused here, by the same check.
    crate::check::check_events(&events).map_err(|(index, rejection)| {
        FluxImportError::OutOfBounds {
            path: shown.clone(),
            index,
            rejection,
        }
    })?;
    Ok(FluxDb {
        events,
        users,
        queues,
        deny_unknown_queues,
        notes,
    })
}

fn account_event(t: Time, bank: &BankRow, parent: &str) -> Event {
    Event {
        t,
        op: Op::Account {
            name: bank.name.clone(),
            parent: Some(parent.to_string()),
            shares: Some(bank.shares),
            priority: Some(bank.priority),
        },
    }
}

#[cfg(test)]
mod tests;
