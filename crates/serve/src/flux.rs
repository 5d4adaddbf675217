//! Flux's own views, as flux-accounting v0.60 prints them: `flux account
//! view-bank BANK -t [-P]` (the bank tree with shares, usage and fair-share;
//! `formatter.py`'s `BankFormatter.as_tree` / `as_parsable_tree`) and `flux
//! account jobs` (each job's priority factors; `priorities.py`'s
//! `job_priorities`, with `-v` its `construct_priority_calculation`); and
//! the fair-share emulator's output ([`emulate`]).
//! Numbers are written as Python writes them (`str(float)`: `100.0`,
//! `0.285714`).
//!
//! What fairflow has and flux-accounting prints differently: every
//! association fairflow knows is active (inactive ones are not imported), so
//! `Active` is always `true`; fairflow's root has no shares (flux's root's
//! never matter: it has no siblings), printed as 1; `RawUsage` is fairflow's
//! decayed usage at the query time rounded to 6 decimals (the root line to 2,
//! as flux-accounting rounds it), and `Fairshare` fairflow's fair-share
//! rounded to 6 decimals, as flux-accounting stores it. Sub-banks and users
//! come in fairflow's tree order (by name), where flux-accounting lists them
//! in insertion order. Job ids are fairflow's (a Flux journal's are the
//! decimal ids, not F58).

pub mod emulate;

use fairflow_model::report::{FairshareTable, JobPriority, JobState};
use fairflow_model::Shares;

/// One row of the bank tree: a bank (`user` empty) or an association.
#[derive(Debug, Clone, PartialEq)]
pub struct BankTreeRow {
    /// The bank (an association's bank).
    pub bank: String,
    /// The user of an association.
    pub user: Option<String>,
    /// Depth in the tree: root 0.
    pub depth: usize,
    /// Raw shares (`None`: root).
    pub shares: Option<Shares>,
    /// Decayed usage.
    pub usage: f64,
    /// An association's fair-share.
    pub fairshare: Option<f64>,
}

/// The bank tree of a fair-share table.
pub fn bank_tree(table: &FairshareTable) -> Vec<BankTreeRow> {
    table
        .rows
        .iter()
        .map(|row| BankTreeRow {
            bank: row.account.clone(),
            user: row.user.clone(),
            depth: row.depth,
            shares: row.raw_shares,
            usage: row.usage_tres_secs,
            fairshare: row.fairshare,
        })
        .collect()
}

/// `x` as Python's `str(float)` writes it: the shortest round-trip digits,
/// `.0` on whole numbers, exponent form below `1e-4` and from `1e16`.
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let magnitude = x.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        let text = format!("{x:e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let text = format!("{x}");
    if text.contains('.') {
        text
    } else {
        text + ".0"
    }
}

/// Python's `round(x, digits)` for what is printed here (half away from
/// zero on the decimal; Python rounds the binary value half to even, which
/// differs only on exact binary halves).
fn round_to(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

fn shares_text(shares: Option<Shares>) -> String {
    shares.map_or_else(|| "1".to_string(), |s| s.to_string())
}

/// `flux account view-bank BANK -t` (`parsable`: with `-P`): the tree under
/// `bank`, or `None` when there is no such bank. A bank's users are listed
/// only when it has no sub-banks, as flux-accounting's walk does.
pub fn render_view_bank(rows: &[BankTreeRow], bank: &str, parsable: bool) -> Option<String> {
    let start = rows
        .iter()
        .position(|r| r.user.is_none() && r.bank == bank)?;
    let top = &rows[start];
    let subtree: Vec<&BankTreeRow> = rows[start + 1..]
        .iter()
        .take_while(|r| r.depth > top.depth)
        .collect();
    // The banks with sub-banks: each bank row's parent is the bank row last
    // seen one level up.
    let mut path: Vec<&str> = vec![top.bank.as_str()];
    let mut with_sub_banks: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for row in subtree.iter().filter(|r| r.user.is_none()) {
        let depth = row.depth - top.depth;
        path.truncate(depth);
        if let Some(parent) = path.last() {
            with_sub_banks.insert(parent);
        }
        path.push(&row.bank);
    }
    let mut lines = Vec::new();
    let usage_root = python_float(round_to(top.usage, 2));
    if parsable {
        lines.push("Bank|Username|Active|RawShares|RawUsage|Fairshare".to_string());
        lines.push(format!(
            "{}||true|{}|{usage_root}",
            top.bank,
            shares_text(top.shares)
        ));
    } else {
        lines.push(format!(
            "{:<20}{:>20}{:>20}{:>20}{:>20}{:>20}",
            "Bank", "Username", "Active", "RawShares", "RawUsage", "Fairshare"
        ));
        lines.push(format!(
            "{:<20}{:>20}{:>20}{:>20}{:>20}",
            top.bank,
            "",
            "true",
            shares_text(top.shares),
            usage_root
        ));
    }
    for row in &subtree {
        let depth = row.depth - top.depth;
        let prefix = " ".repeat(depth);
        let usage = python_float(round_to(row.usage, 6));
        let shares = shares_text(row.shares);
        match &row.user {
            None => lines.push(if parsable {
                format!("{prefix}{}||true|{shares}|{usage}", row.bank)
            } else {
                format!(
                    "{prefix}{:<20}{:>w$}{:>20}{:>20}{:>20}",
                    row.bank,
                    "",
                    "true",
                    shares,
                    usage,
                    w = 20usize.saturating_sub(depth)
                )
            }),
            Some(user) => {
                if with_sub_banks.contains(row.bank.as_str()) {
                    continue;
                }
                // An association's row is one deeper than its bank's; flux
                // prints it with its bank's indent plus one.
                let fairshare = python_float(round_to(row.fairshare.unwrap_or(0.0), 6));
                lines.push(if parsable {
                    format!(
                        "{prefix}{}|{user}|true|{shares}|{usage}|{fairshare}",
                        row.bank
                    )
                } else {
                    format!(
                        "{prefix}{:<20}{:>w$}{:>20}{:>20}{:>20}{:>20}",
                        row.bank,
                        user,
                        "true",
                        shares,
                        usage,
                        fairshare,
                        w = 20usize.saturating_sub(depth)
                    )
                });
            }
        }
    }
    // flux-accounting joins the lines, ends them with a newline, and
    // `print` adds another.
    Some(lines.join("\n") + "\n\n")
}

/// One job as `flux account jobs` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FluxJobRow {
    /// `JOBID`.
    pub job: String,
    /// `USER`.
    pub user: String,
    /// `BANK`.
    pub bank: String,
    /// `BANKPRIO`.
    pub bank_priority: f64,
    /// `BANKFACT` (the bank weight).
    pub bank_weight: i64,
    /// `QUEUE`.
    pub queue: String,
    /// `QPRIO`.
    pub queue_priority: i64,
    /// `QFACT`.
    pub queue_weight: i64,
    /// `FAIRSHARE`.
    pub fairshare: f64,
    /// `FSFACTOR`.
    pub fairshare_weight: i64,
    /// `URGENCY`.
    pub urgency: i64,
    /// `URGFACT`.
    pub urgency_weight: i64,
    /// `PRIORITY`.
    pub priority: u64,
}

/// A Flux-model job's row, from its factors (`None` for a job of another
/// model).
pub fn flux_job_row(job: &JobPriority) -> Option<FluxJobRow> {
    if job.model != fairflow_model::PriorityModel::Flux {
        return None;
    }
    let factor = |name: &str| job.factors.iter().find(|f| f.name == name);
    let value = |name: &str| factor(name).map_or(0.0, |f| f.normalized);
    let weight = |name: &str| factor(name).map_or(0, |f| f.weight as i64);
    Some(FluxJobRow {
        job: job.job.clone(),
        user: job.user.clone(),
        bank: job.account.clone(),
        bank_priority: value("bank"),
        bank_weight: weight("bank"),
        queue: job.partition.clone(),
        queue_priority: value("queue") as i64,
        queue_weight: weight("queue"),
        fairshare: round_to(value("fairshare"), 6),
        fairshare_weight: weight("fairshare"),
        urgency: value("urgency") as i64 + 16,
        urgency_weight: weight("urgency"),
        priority: job.priority,
    })
}

/// The rows of the pending (and held) jobs, in the order given.
pub fn flux_job_rows(jobs: &[JobPriority]) -> Vec<FluxJobRow> {
    jobs.iter()
        .filter(|j| matches!(j.state, JobState::Pending | JobState::Held))
        .filter_map(flux_job_row)
        .collect()
}

/// `flux account jobs` (`verbose`: `-v`, each job's calculation).
pub fn render_flux_jobs(rows: &[FluxJobRow], verbose: bool) -> String {
    if verbose {
        let mut text = String::new();
        for r in rows {
            text.push_str(&format!("{}\n", r.job));
            text.push_str(
                "= (FAIRSHARE * FAIRSHARE_WEIGHT) + (QUEUE_PRIORITY * QUEUE_WEIGHT) + \
                 (BANK_PRIORITY * BANK_WEIGHT) + (URGENCY_WEIGHT * (URGENCY - 16))\n",
            );
            let fairshare = python_float(r.fairshare);
            let bank_priority = python_float(r.bank_priority);
            text.push_str(&format!(
                "= ({fairshare} * {}) + ({} * {}) + ({bank_priority} * {}) + ({} * ({} - 16))\n",
                r.fairshare_weight,
                r.queue_priority,
                r.queue_weight,
                r.bank_weight,
                r.urgency_weight,
                r.urgency
            ));
            text.push_str(&format!(
                "= {} + {} + {} + {}\n",
                python_float(r.fairshare * r.fairshare_weight as f64),
                r.queue_priority * r.queue_weight,
                python_float(r.bank_priority * r.bank_weight as f64),
                r.urgency_weight * (r.urgency - 16)
            ));
            text.push_str(&format!("= {}\n", r.priority));
        }
        // `print` of the joined rows.
        return text + "\n";
    }
    let mut lines = vec![format!(
        "{:<15}{:<9}{:<8}{:<10}{:<10}{:<8}{:<7}{:<7}{:<10}{:<10}{:<8}{:<8}{:<8}",
        "JOBID",
        "USER",
        "BANK",
        "BANKPRIO",
        "BANKFACT",
        "QUEUE",
        "QPRIO",
        "QFACT",
        "FAIRSHARE",
        "FSFACTOR",
        "URGENCY",
        "URGFACT",
        "PRIORITY"
    )];
    let body: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{:<15}{:<9}{:<8}{:<10}{:<10}{:<8}{:<7}{:<7}{:<10}{:<10}{:<8}{:<8}{:<8}",
                r.job,
                r.user,
                r.bank,
                python_float(r.bank_priority),
                r.bank_weight,
                r.queue,
                r.queue_priority,
                r.queue_weight,
                python_float(r.fairshare),
                r.fairshare_weight,
                r.urgency,
                r.urgency_weight,
                r.priority
            )
        })
        .collect();
    lines.push(body.join("\n"));
    // `f"{header}\n" + "\n".join(rows)`, then `print`.
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests;
