//! `fairflow import flux`: a flux-accounting database (SQLite, schema version
//! [`FLUX_DB_SCHEMA_VERSION`], flux-accounting v0.60's `create_db.py`) read to
//! an event log, so that a Flux site can load its banks, associations, queues,
//! weights, usage and configuration; or its fair-share emulator's JSON
//! hierarchy (`emulate`), read to the same rows and events by the same rules.
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
//!   child: every fair-share is the same); another bank named `root` is an
//!   error. Inactive banks, the banks under
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
use fairflow_model::{Event, Time};

mod emulate;
mod rows;
mod settings;
mod tree;

pub use emulate::{parse_flux_emulate, read_flux_emulate, MAX_EMULATE_INPUT_BYTES};
use rows::Db;

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
    /// The emulator's input (`--emulate`) is not JSON.
    #[error("{path}: not JSON: {source}")]
    Json {
        /// The file's path.
        path: String,
        /// serde_json's error, with the line and column.
        source: serde_json::Error,
    },
    /// A node of the emulator's input holds what fairflow cannot use.
    #[error("{path}: {at}: {reason}")]
    Node {
        /// The file's path.
        path: String,
        /// The JSON path of the node or field (`root.children[1].shares`).
        at: String,
        /// What is wrong.
        reason: String,
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

/// Read the flux-accounting database at `path` to events at time `t`: the
/// configuration (`settings`), the bank tree, its associations with their
/// usage bins, and the queues (`tree`), checked as the log's reader checks.
pub fn read_flux_db(path: &Path, t: Time) -> Result<FluxDb, FluxImportError> {
    crate::files::require_regular_file(path)?;
    let shown = path.display().to_string();
    let db = Db::open(path, &shown)?;
    let mut notes = Vec::new();
    let settings = settings::read_settings(&db)?;
    let banks = tree::read_banks(&db)?;
    let bank_tree = tree::bank_tree(&db, &banks, t)?;
    let members = tree::members(&db, &bank_tree, settings.bin_count, t, &mut notes)?;
    let queues = tree::queues(&db, t)?;
    assemble(&shown, t, settings, bank_tree, members, queues, notes)
}

/// The events of an import, in the order the module's doc says (the
/// configuration, the accounts, the users, the queues, the usage), checked
/// as the log's reader checks them, with the notes (a left-out bank first).
fn assemble(
    shown: &str,
    t: Time,
    settings: settings::Settings,
    mut bank_tree: tree::BankTree<'_>,
    members: tree::Members,
    (queue_events, queues): (Vec<Event>, BTreeSet<String>),
    mut notes: Vec<String>,
) -> Result<FluxDb, FluxImportError> {
    let mut events = vec![Event {
        t,
        op: Op::Config { set: settings.set },
    }];
    events.append(&mut bank_tree.account_events);
    let left_out = bank_tree.left_out;
    if left_out > 0 {
        notes.insert(
            0,
            format!("{left_out} active banks under inactive ones left out"),
        );
    }
    events.extend(members.user_events);
    events.extend(queue_events);
    events.extend(members.usage_events);
    // What the log's reader would refuse is refused here, by the same check.
    crate::check::check_events(&events).map_err(|(index, rejection)| {
        FluxImportError::OutOfBounds {
            path: shown.to_string(),
            index,
            rejection,
        }
    })?;
    Ok(FluxDb {
        events,
        users: members.users,
        queues,
        deny_unknown_queues: settings.deny_unknown_queues,
        notes,
    })
}

#[cfg(test)]
mod tests;
