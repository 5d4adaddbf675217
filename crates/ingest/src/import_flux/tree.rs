//! The bank tree and its members a flux-accounting database gives: the
//! active banks, each after its parent (`bank_table`), the associations in
//! banks without sub-banks with their usage bins (`association_table`,
//! `job_usage_per_association_table`), and the queues (`queue_table`). The
//! rules from rows to events ([`bank_tree`], [`members_of`]) are the same
//! for the emulator's JSON (`super::emulate`), which gives the same rows.

use std::collections::{BTreeMap, BTreeSet};

use fairflow_model::event::Op;
use fairflow_model::{Event, Shares, Time};

use super::rows::{key_text, usage_of, Db, RowErrors};
use super::{FluxImportError, FluxUser};

/// One row of `bank_table` (or one bank of the emulator's JSON).
pub(super) struct BankRow {
    /// Where the row is, for errors: the bank's name, or its JSON path.
    pub(super) key: String,
    pub(super) name: String,
    pub(super) active: bool,
    /// The parent bank's name; empty for the root.
    pub(super) parent: String,
    pub(super) shares: Shares,
    /// The bank priority (`None`: not given).
    pub(super) priority: Option<i64>,
}

/// Usage bins by (username, bank): each bin's period and value.
pub(super) type Bins = BTreeMap<(String, String), Vec<(usize, f64)>>;

/// One row of `association_table` (or one user of the emulator's JSON).
pub(super) struct AssocRow {
    /// Where the row is, for errors: `username/bank`, or its JSON path.
    pub(super) key: String,
    pub(super) username: String,
    /// The Flux user id (`None`: not given, so no job maps to it).
    pub(super) userid: Option<u32>,
    pub(super) bank: String,
    pub(super) default_bank: String,
    pub(super) shares: Shares,
    pub(super) usage: f64,
    pub(super) active: bool,
}

/// Read `bank_table`, in `bank_id` order.
pub(super) fn read_banks(db: &Db<'_>) -> Result<Vec<BankRow>, FluxImportError> {
    db.rows(
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
                    key: key.clone(),
                    name: c.name(0, "bank")?,
                    active: c.flag(1, "active")?,
                    parent: c.text_or_empty(2, "parent_bank")?,
                    shares: c.shares(3, "shares")?,
                    priority: Some(priority as i64),
                })
            })();
            (key, value)
        },
    )
}

/// The banks imported: every active bank reached from the active root.
pub(super) struct BankTree<'b> {
    /// One `account` event per imported bank, each after its parent.
    pub(super) account_events: Vec<Event>,
    /// Every bank of `bank_table`, active or not.
    all_banks: BTreeSet<&'b str>,
    /// The imported banks.
    imported: BTreeSet<String>,
    /// The imported banks with imported sub-banks.
    has_children: BTreeSet<String>,
    /// Active banks under inactive ones, left out.
    pub(super) left_out: usize,
}

/// The active root bank, with every active bank checked: one of each
/// name, one root, each parent in `bank_table`.
fn active_root<'b>(
    errors: &impl RowErrors,
    banks: &'b [BankRow],
) -> Result<(&'b BankRow, usize), FluxImportError> {
    let all_banks: BTreeSet<&str> = banks.iter().map(|b| b.name.as_str()).collect();
    let mut active: BTreeMap<&str, &BankRow> = BTreeMap::new();
    let mut root: Option<&BankRow> = None;
    for bank in banks.iter().filter(|b| b.active) {
        if active.insert(&bank.name, bank).is_some() {
            return Err(errors.row_error(
                "bank_table",
                bank.key.clone(),
                "bank",
                "a second active bank of this name".into(),
            ));
        }
        if bank.name == "root" && !bank.parent.is_empty() {
            return Err(errors.row_error(
                "bank_table",
                bank.key.clone(),
                "bank",
                "`root` is fairflow's root: only the root bank (no parent) may have this name"
                    .into(),
            ));
        }
        if bank.parent.is_empty() {
            if let Some(first) = root {
                return Err(errors.row_error(
                    "bank_table",
                    bank.key.clone(),
                    "parent_bank",
                    format!(
                        "a second root bank (empty parent_bank) besides `{}`",
                        first.name
                    ),
                ));
            }
            root = Some(bank);
        } else if !all_banks.contains(bank.parent.as_str()) {
            return Err(errors.row_error(
                "bank_table",
                bank.key.clone(),
                "parent_bank",
                format!("`{}` is not in bank_table", bank.parent),
            ));
        }
    }
    let Some(root) = root else {
        return Err(errors.row_error(
            "bank_table",
            "(none)".into(),
            "parent_bank",
            "no active root bank (a bank whose parent_bank is empty)".into(),
        ));
    };
    Ok((root, active.len()))
}

/// Walk the active banks from the root, level by level: fairflow's name
/// of a flux bank is its own, and the root named `root` is fairflow's root.
pub(super) fn bank_tree<'b>(
    errors: &impl RowErrors,
    banks: &'b [BankRow],
    t: Time,
) -> Result<BankTree<'b>, FluxImportError> {
    let (root, active) = active_root(errors, banks)?;
    let mut account_events = Vec::new();
    let mut imported: BTreeSet<String> = BTreeSet::new();
    let mut has_children: BTreeSet<String> = BTreeSet::new();
    imported.insert(root.name.clone());
    if root.name != "root" {
        account_events.push(account_event(t, root, "root"));
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
                account_events.push(account_event(t, bank, parent));
                next.push(bank.name.clone());
            }
        }
        frontier = next;
    }
    Ok(BankTree {
        account_events,
        all_banks: banks.iter().map(|b| b.name.as_str()).collect(),
        left_out: active - imported.len(),
        imported,
        has_children,
    })
}

fn account_event(t: Time, bank: &BankRow, parent: &str) -> Event {
    Event {
        t,
        op: Op::Account {
            name: bank.name.clone(),
            parent: Some(parent.to_string()),
            shares: Some(bank.shares),
            priority: bank.priority,
        },
    }
}

/// The imported associations.
pub(super) struct Members {
    /// One `user` event per imported association.
    pub(super) user_events: Vec<Event>,
    /// One `usage` event per bin that is not 0.
    pub(super) usage_events: Vec<Event>,
    /// The users by Flux `userid`.
    pub(super) users: BTreeMap<u32, FluxUser>,
}

/// Read `association_table`.
fn read_associations(db: &Db<'_>) -> Result<Vec<AssocRow>, FluxImportError> {
    db.rows(
        "association_table",
        "SELECT username, userid, bank, default_bank, shares, job_usage, active \
         FROM association_table ORDER BY rowid",
        |c| {
            let key = format!("{}/{}", key_text(c, 0), key_text(c, 2));
            let value = (|| {
                let userid = c.integer(1, "userid")?;
                Ok(AssocRow {
                    key: key.clone(),
                    username: c.name(0, "username")?,
                    userid: Some(
                        u32::try_from(userid)
                            .map_err(|_| ("userid", format!("{userid} is not a user id")))?,
                    ),
                    bank: c.name(2, "bank")?,
                    default_bank: c.text(3, "default_bank")?,
                    shares: c.shares(4, "shares")?,
                    usage: usage_of(c.real(5, "job_usage")?)
                        .map_err(|r| ("job_usage", r.to_string()))?,
                    active: c.flag(6, "active")?,
                })
            })();
            (key, value)
        },
    )
}

/// Usage bins, by (username, bank): (period, value), from
/// `job_usage_per_association_table` (a period beyond `bin_count` bins is
/// an error).
fn read_bins(db: &Db<'_>, bin_count: usize) -> Result<Bins, FluxImportError> {
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
                let value = usage_of(c.real(3, "value")?).map_err(|r| ("value", r.to_string()))?;
                Ok((
                    (c.text(0, "username")?, c.text(1, "bank")?),
                    (period, value),
                ))
            })();
            (key, value)
        },
    )?;
    let mut bins: Bins = BTreeMap::new();
    for (key, bin) in bin_rows {
        bins.entry(key).or_default().push(bin);
    }
    Ok(bins)
}

/// What was counted over the associations, for the notes.
#[derive(Default)]
struct Counted {
    without_bins: usize,
    bins_differ: usize,
    under_sub_banks: usize,
}

/// Read the database's associations and their bins, and make them members
/// ([`members_of`]).
pub(super) fn members(
    db: &Db<'_>,
    tree: &BankTree<'_>,
    bin_count: usize,
    t: Time,
    notes: &mut Vec<String>,
) -> Result<Members, FluxImportError> {
    let assocs = read_associations(db)?;
    let bins = read_bins(db, bin_count)?;
    members_of(db, tree, &assocs, &bins, t, notes)
}

/// The imported associations (active, in an imported bank without
/// sub-banks) as `user` and `usage` events; what was left out or differs is
/// said in `notes`.
pub(super) fn members_of(
    errors: &impl RowErrors,
    tree: &BankTree<'_>,
    assocs: &[AssocRow],
    bins: &Bins,
    t: Time,
    notes: &mut Vec<String>,
) -> Result<Members, FluxImportError> {
    let mut counted = Counted::default();
    let mut out = Members {
        user_events: Vec::new(),
        usage_events: Vec::new(),
        users: BTreeMap::new(),
    };
    for assoc in assocs.iter().filter(|a| a.active) {
        if !tree.all_banks.contains(assoc.bank.as_str()) {
            return Err(errors.row_error(
                "association_table",
                assoc.key.clone(),
                "bank",
                format!("`{}` is not in bank_table", assoc.bank),
            ));
        }
        if !tree.imported.contains(&assoc.bank) {
            continue;
        }
        if tree.has_children.contains(&assoc.bank) {
            counted.under_sub_banks += 1;
            continue;
        }
        add_member(errors, assoc, bins, t, &mut counted, &mut out)?;
    }
    if counted.without_bins > 0 {
        notes.push(format!(
            "{} associations with usage but no rows in job_usage_per_association_table: their job_usage is put in bin 0",
            counted.without_bins
        ));
    }
    if counted.bins_differ > 0 {
        notes.push(format!(
            "{} associations whose job_usage is not the sum of their bins: the bins are imported",
            counted.bins_differ
        ));
    }
    if counted.under_sub_banks > 0 {
        notes.push(format!(
            "{} associations in banks that have sub-banks left out (flux-accounting's fair-share ignores them)",
            counted.under_sub_banks
        ));
    }
    Ok(out)
}

/// One imported association: its `user` event, its bins' `usage` events
/// (without any bins, its `job_usage` in bin 0), and its user.
fn add_member(
    errors: &impl RowErrors,
    assoc: &AssocRow,
    bins: &Bins,
    t: Time,
    counted: &mut Counted,
    out: &mut Members,
) -> Result<(), FluxImportError> {
    let account = assoc.bank.clone();
    out.user_events.push(Event {
        t,
        op: Op::User {
            user: assoc.username.clone(),
            account: account.clone(),
            shares: Some(assoc.shares),
            priority: None,
        },
    });
    let own_bins = match bins.get(&(assoc.username.clone(), assoc.bank.clone())) {
        Some(rows) => {
            let sum: f64 = rows.iter().map(|(_, v)| v).sum();
            if (sum - assoc.usage).abs() > 1e-6 * sum.abs().max(1.0) {
                counted.bins_differ += 1;
            }
            rows.clone()
        }
        None => {
            if assoc.usage > 0.0 {
                counted.without_bins += 1;
            }
            vec![(0, assoc.usage)]
        }
    };
    for (period, amount) in own_bins.into_iter().filter(|(_, v)| *v > 0.0) {
        out.usage_events.push(Event {
            t,
            op: Op::Usage {
                account: account.clone(),
                user: Some(assoc.username.clone()),
                amount,
                period: Some(period as u32),
            },
        });
    }
    let Some(userid) = assoc.userid else {
        return Ok(());
    };
    let user = out.users.entry(userid).or_insert_with(|| FluxUser {
        username: assoc.username.clone(),
        default_bank: String::new(),
        banks: BTreeSet::new(),
    });
    if user.username != assoc.username {
        return Err(errors.row_error(
            "association_table",
            assoc.key.clone(),
            "userid",
            format!("user id {userid} is also user `{}`'s", user.username),
        ));
    }
    user.banks.insert(assoc.bank.clone());
    if !assoc.default_bank.is_empty() {
        user.default_bank = assoc.default_bank.clone();
    }
    Ok(())
}

/// `queue_table`: one `partition` event per queue with its priority, and
/// the queues' names.
pub(super) fn queues(
    db: &Db<'_>,
    t: Time,
) -> Result<(Vec<Event>, BTreeSet<String>), FluxImportError> {
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
    let mut events = Vec::new();
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
    Ok((events, queues))
}
