//! `fairflow audit` and `GET /v1/audit`: who is over- and under-served. From
//! the fair-share table and the waiting users the engine lists (no engine:
//! these are the engines' answers), per association at its level of the
//! tree, its usage share against its normalised shares:
//!
//! - `level_share`: its shares over its siblings' (a `FairShare=parent`
//!   association counts 0);
//! - `level_usage`: its raw usage over its siblings' (none when the siblings
//!   have no usage);
//! - `level_error = level_usage − level_share`: above 0 it used more than
//!   its share among its siblings (over-served), below 0 less (under-served);
//! - `global_share` (the product of the level shares from `root`),
//!   `global_usage` (raw usage over `root`'s) and their difference.
//!
//! And the users with a high fair-share factor (at least `min_factor`) whose
//! pending jobs have waited longest: the ones a help desk hears from.
//! Rendered as tables (per level, the `top` most over- and most
//! under-served) or JSON.

pub use fairflow_model::report::WaitingUser;
use fairflow_model::report::{FairshareRow, Name, UsageRow};
use fairflow_model::Time;
use serde_json::{json, Value};

use crate::format::{aligned, fixed6, json_f64, opt_fixed6, Column, Justify};
use crate::OutputFormat;

/// One association's figures (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct AssociationAudit {
    /// The account (a user association's account).
    pub account: Name,
    /// The user, for a user association.
    pub user: Option<Name>,
    /// Its depth (`root`'s children are 1).
    pub depth: usize,
    /// Its shares among its siblings'.
    pub level_share: Option<f64>,
    /// Its raw usage among its siblings'.
    pub level_usage: Option<f64>,
    /// `level_usage − level_share`.
    pub level_error: Option<f64>,
    /// The product of the level shares from `root`.
    pub global_share: Option<f64>,
    /// Its raw usage over `root`'s.
    pub global_usage: Option<f64>,
    /// `global_usage − global_share`.
    pub global_error: Option<f64>,
}

/// One association's figures at its level and from `root`, without its
/// names (which stay in its row): what [`AssociationAudit`] adds to a row.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figures {
    level_share: Option<f64>,
    level_usage: Option<f64>,
    global_share: Option<f64>,
    global_usage: Option<f64>,
}

impl Figures {
    fn level_error(&self) -> Option<f64> {
        difference(self.level_usage, self.level_share)
    }
}

/// The audit of one state. Its rows keep their names; each association's
/// figures are kept beside its row, and an [`AssociationAudit`] (names and
/// figures together) is made only for the associations an answer shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Audit {
    /// The time it is as of.
    pub as_of: Time,
    /// Every association's row, in the table's tree order (`root` too).
    rows: Vec<UsageRow>,
    /// Each row's figures (`None`: `root`, which is not audited).
    figures: Vec<Option<Figures>>,
    /// The users whose factor is at least the asked minimum and who have
    /// pending jobs, longest wait first ([`WaitingUser::rank`]).
    pub waiting: Vec<WaitingUser>,
}

impl Audit {
    /// Every association but `root`, in the table's tree order.
    pub fn associations(&self) -> impl Iterator<Item = AssociationAudit> + '_ {
        (0..self.rows.len()).filter_map(|i| self.association(i))
    }

    /// The row `i`'s association with its figures (`None` for `root`).
    fn association(&self, i: usize) -> Option<AssociationAudit> {
        let figures = self.figures.get(i).copied().flatten()?;
        let row = &self.rows[i];
        Some(AssociationAudit {
            account: row.account.clone(),
            user: row.user.clone(),
            depth: row.depth,
            level_share: figures.level_share,
            level_usage: figures.level_usage,
            level_error: figures.level_error(),
            global_share: figures.global_share,
            global_usage: figures.global_usage,
            global_error: difference(figures.global_usage, figures.global_share),
        })
    }

    /// The row `i`'s level error (`None`: `root`, or no error).
    fn level_error(&self, i: usize) -> Option<f64> {
        self.figures.get(i).copied().flatten()?.level_error()
    }

    /// The row `i`'s names, as the audit's orders compare them.
    fn names(&self, i: usize) -> (&Name, Option<&Name>) {
        let row = &self.rows[i];
        (&row.account, row.user.as_ref())
    }
}

fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

fn difference(usage: Option<f64>, share: Option<f64>) -> Option<f64> {
    Some(usage? - share?)
}

/// Each row's parent in a table in tree order (`None` for `root`): the
/// last account row one level up.
pub fn parents(rows: &[FairshareRow]) -> Vec<Option<usize>> {
    parents_in_order(rows.iter().map(|row| (row.depth, row.user.is_some())))
}

/// [`parents`] of rows given as `(depth, is a user association)` in tree
/// order.
fn parents_in_order(rows: impl ExactSizeIterator<Item = (usize, bool)>) -> Vec<Option<usize>> {
    let mut parent: Vec<Option<usize>> = vec![None; rows.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, (depth, is_user)) in rows.enumerate() {
        open.truncate(depth);
        if depth > 0 {
            parent[i] = open.get(depth - 1).copied();
        }
        if !is_user {
            open.push(i);
        }
    }
    parent
}

/// The audit of the associations `rows` (in the table's tree order: the
/// `Engine::usage_rows` of an engine, or a table's rows) with the users
/// `waiting` (as the engine lists them:
/// `fairflow_engine::Engine::waiting_users`), as of `now`. The figures are
/// computed for every association; no name is copied.
pub fn audit(rows: Vec<UsageRow>, waiting: Vec<WaitingUser>, now: Time) -> Audit {
    let parent = parents_in_order(rows.iter().map(|row| (row.depth, row.user.is_some())));
    // Each account's children's (shares, usage), by the account's row.
    let mut sums: Vec<(u64, u64)> = vec![(0, 0); rows.len()];
    for (i, row) in rows.iter().enumerate() {
        if let Some(p) = parent[i] {
            sums[p].0 += row.raw_shares.map_or(0, |s| s.raw());
            sums[p].1 += row.raw_usage;
        }
    }
    let root_usage = rows.first().map_or(0, |r| r.raw_usage);
    let mut global: Vec<Option<f64>> = vec![Some(1.0); rows.len()];
    let mut figures: Vec<Option<Figures>> = vec![None; rows.len()];
    for (i, row) in rows.iter().enumerate() {
        let Some(p) = parent[i] else {
            continue;
        };
        let (shares, usage) = sums[p];
        let level_share = ratio(row.raw_shares.map_or(0, |s| s.raw()), shares);
        global[i] = global[p].zip(level_share).map(|(a, b)| a * b);
        figures[i] = Some(Figures {
            level_share,
            level_usage: ratio(row.raw_usage, usage),
            global_share: global[i],
            global_usage: ratio(row.raw_usage, root_usage),
        });
    }
    Audit {
        as_of: now,
        rows,
        figures,
        waiting,
    }
}

/// The order of over-served associations (rows of `audit`): the larger
/// level error first, then by account and user.
fn most_over(audit: &Audit, a: usize, b: usize) -> std::cmp::Ordering {
    let error = |i| audit.level_error(i).unwrap_or(0.0);
    error(b)
        .total_cmp(&error(a))
        .then_with(|| audit.names(a).cmp(&audit.names(b)))
}

/// The first `top` of `level` (rows of `audit`): the most over-served in
/// [`most_over`]'s order (`over`), else the most under-served in its
/// reverse. That order ranks by the level error first and reads names only
/// among equal errors, so the `top`-th error is found among the errors
/// alone, and only the associations that reach it are ordered in full, in
/// one pass that keeps the `top` best so far (a name is read only against
/// the last kept, and only among equal errors): `O(n + top log top)`, not a
/// sort of the level.
fn first_in(audit: &Audit, mut level: Vec<(usize, f64)>, top: usize, over: bool) -> Vec<usize> {
    if top == 0 {
        return Vec::new();
    }
    let order = |a: usize, b: usize| match over {
        true => most_over(audit, a, b),
        false => most_over(audit, b, a),
    };
    // The larger the more over-served (`over`), else the more under-served.
    let signed = |error: f64| if over { error } else { -error };
    if level.len() > top {
        let mut errors: Vec<f64> = level.iter().map(|&(_, e)| signed(e)).collect();
        let (_, cut, _) = errors.select_nth_unstable_by(top - 1, |a, b| b.total_cmp(a));
        let cut = *cut;
        level.retain(|&(_, e)| signed(e).total_cmp(&cut).is_ge());
    }
    let mut kept: Vec<usize> = Vec::with_capacity(top + 1);
    for (association, _) in level {
        if kept.len() == top && order(association, kept[top - 1]).is_ge() {
            continue;
        }
        let at = kept.partition_point(|&k| order(k, association).is_le());
        kept.insert(at, association);
        kept.truncate(top);
    }
    kept
}

/// One level of [`extremes`]: its depth, its most over-served and its most
/// under-served associations.
pub type LevelExtremes = (usize, Vec<AssociationAudit>, Vec<AssociationAudit>);

/// Per depth, the `top` most over-served (largest positive level error) and
/// most under-served (most negative) associations: over-served by
/// [`most_over`]'s order, under-served in its reverse (the most negative
/// error first; of equal errors, the later account and user first). Only
/// the associations listed are named.
pub fn extremes(audit: &Audit, top: usize) -> Vec<LevelExtremes> {
    let deepest = (audit.figures.iter().zip(&audit.rows))
        .filter(|(figures, _)| figures.is_some())
        .map(|(_, row)| row.depth)
        .max();
    let levels = deepest.map_or(0, |d| d + 1);
    let mut over: Vec<Vec<(usize, f64)>> = vec![Vec::new(); levels];
    let mut under = over.clone();
    let mut present = vec![false; levels];
    for (i, figures) in audit.figures.iter().enumerate() {
        let Some(figures) = figures else {
            continue;
        };
        let depth = audit.rows[i].depth;
        present[depth] = true;
        match figures.level_error() {
            Some(error) if error > 0.0 => over[depth].push((i, error)),
            Some(error) if error < 0.0 => under[depth].push((i, error)),
            _ => {}
        }
    }
    let named = |rows: Vec<usize>| -> Vec<AssociationAudit> {
        rows.into_iter()
            .filter_map(|i| audit.association(i))
            .collect()
    };
    over.into_iter()
        .zip(under)
        .enumerate()
        .filter(|(depth, _)| present[*depth])
        .map(|(depth, (over, under))| {
            let over = named(first_in(audit, over, top, true));
            let under = named(first_in(audit, under, top, false));
            (depth, over, under)
        })
        .collect()
}

/// The `limit` accounts with the largest level error in absolute value (ties
/// by name): `(account, level_error)`, for the `fairness_error` gauge.
pub fn account_errors(audit: &Audit, limit: usize) -> Vec<(String, f64)> {
    let mut errors: Vec<(String, f64)> = (0..audit.rows.len())
        .filter(|&i| audit.rows[i].user.is_none())
        .filter_map(|i| Some((audit.rows[i].account.to_string(), audit.level_error(i)?)))
        .collect();
    errors.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then_with(|| a.0.cmp(&b.0)));
    errors.truncate(limit);
    errors
}

const LEVEL_COLUMNS: [Column; 9] = [
    Column {
        name: "DEPTH",
        width: 5,
        justify: Justify::Right,
    },
    Column {
        name: "ACCOUNT",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "USER",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "SHARE",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "USAGE",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "ERROR",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "GLOBAL_SHARE",
        width: 12,
        justify: Justify::Right,
    },
    Column {
        name: "GLOBAL_USAGE",
        width: 12,
        justify: Justify::Right,
    },
    Column {
        name: "GLOBAL_ERROR",
        width: 12,
        justify: Justify::Right,
    },
];

const WAITING_COLUMNS: [Column; 6] = [
    Column {
        name: "ACCOUNT",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "USER",
        width: 10,
        justify: Justify::Left,
    },
    Column {
        name: "FAIRSHARE",
        width: 10,
        justify: Justify::Right,
    },
    Column {
        name: "PENDING",
        width: 8,
        justify: Justify::Right,
    },
    Column {
        name: "LONGEST_WAIT_SECS",
        width: 17,
        justify: Justify::Right,
    },
    Column {
        name: "OLDEST_JOB",
        width: 10,
        justify: Justify::Right,
    },
];

fn level_cells(a: &AssociationAudit) -> Vec<String> {
    vec![
        a.depth.to_string(),
        a.account.to_string(),
        a.user.as_deref().unwrap_or_default().to_string(),
        opt_fixed6(a.level_share),
        opt_fixed6(a.level_usage),
        opt_fixed6(a.level_error),
        opt_fixed6(a.global_share),
        opt_fixed6(a.global_usage),
        opt_fixed6(a.global_error),
    ]
}

fn level_json(a: &AssociationAudit) -> Value {
    json!({
        "account": a.account,
        "user": a.user,
        "depth": a.depth,
        "level_share": json_f64(a.level_share),
        "level_usage": json_f64(a.level_usage),
        "level_error": json_f64(a.level_error),
        "global_share": json_f64(a.global_share),
        "global_usage": json_f64(a.global_usage),
        "global_error": json_f64(a.global_error),
    })
}

/// The audit as tables (per level, the `top` most over- and under-served;
/// then the first `top` waiting users) or JSON (`as_of`, `levels`: `depth`,
/// `over`, `under`; `waiting`).
pub fn render(audit: &Audit, top: usize, format: OutputFormat) -> String {
    let levels = extremes(audit, top);
    let waiting = audit.waiting.iter().take(top);
    match format {
        OutputFormat::Json | OutputFormat::SlurmJson => {
            let levels: Vec<Value> = levels
                .iter()
                .map(|(depth, over, under)| {
                    json!({
                        "depth": depth,
                        "over": over.iter().map(level_json).collect::<Vec<_>>(),
                        "under": under.iter().map(level_json).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let waiting: Vec<Value> = waiting
                .map(|w| {
                    json!({
                        "account": w.account,
                        "user": w.user,
                        "fairshare": json_f64(Some(w.factor)),
                        "pending_jobs": w.pending_jobs,
                        "longest_wait_secs": w.longest_wait_secs,
                        "oldest_job": w.oldest_job,
                    })
                })
                .collect();
            let object = json!({"as_of": audit.as_of, "levels": levels, "waiting": waiting});
            let mut text =
                serde_json::to_string_pretty(&object).expect("plain values always serialize");
            text.push('\n');
            text
        }
        OutputFormat::Parsable | OutputFormat::Table => {
            let over: Vec<Vec<String>> = levels
                .iter()
                .flat_map(|(_, over, _)| over.iter().map(level_cells))
                .collect();
            let under: Vec<Vec<String>> = levels
                .iter()
                .flat_map(|(_, _, under)| under.iter().map(level_cells))
                .collect();
            let waiting: Vec<Vec<String>> = waiting
                .map(|w| {
                    vec![
                        w.account.clone(),
                        w.user.clone(),
                        fixed6(w.factor),
                        w.pending_jobs.to_string(),
                        w.longest_wait_secs.to_string(),
                        w.oldest_job.clone(),
                    ]
                })
                .collect();
            format!(
                "most over-served (usage share above shares among siblings), per level:\n{}\n\
                 most under-served (usage share below shares among siblings), per level:\n{}\n\
                 high fair-share users whose jobs wait longest:\n{}",
                aligned(&LEVEL_COLUMNS, &over),
                aligned(&LEVEL_COLUMNS, &under),
                aligned(&WAITING_COLUMNS, &waiting)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An audit of associations `(account, depth, level_error)` (their
    /// level share 0, their level usage the error), as a test needs it.
    fn audit_of(associations: Vec<(String, usize, Option<f64>)>) -> Audit {
        let (rows, figures) = associations
            .into_iter()
            .map(|(account, depth, level_error)| {
                let row = UsageRow {
                    account: account.as_str().into(),
                    user: None,
                    depth,
                    raw_shares: None,
                    raw_usage: 0,
                };
                let figures = Figures {
                    level_share: Some(0.0),
                    level_usage: level_error,
                    global_share: None,
                    global_usage: None,
                };
                (row, Some(figures))
            })
            .unzip();
        Audit {
            as_of: 0,
            rows,
            figures,
            waiting: Vec::new(),
        }
    }

    fn association(
        account: &str,
        depth: usize,
        level_error: Option<f64>,
    ) -> (String, usize, Option<f64>) {
        (account.to_string(), depth, level_error)
    }

    /// Per depth, the `top` largest positive errors (ties by name) and the
    /// `top` most negative (ties by name, later first), by hand; a depth
    /// without any error is listed empty; 0 and no error are neither.
    #[test]
    fn extremes_pick_the_top_of_each_level_in_order() {
        let associations = vec![
            association("a", 1, Some(0.1)),
            association("d", 1, Some(0.3)),
            association("b", 1, Some(0.3)),
            association("c", 1, Some(0.2)),
            association("e", 1, Some(-0.2)),
            association("g", 1, Some(-0.2)),
            association("f", 1, Some(-0.5)),
            association("h", 1, Some(0.0)),
            association("i", 1, None),
            association("j", 2, None),
            association("k", 3, Some(-0.1)),
        ];
        let audit = audit_of(associations);
        let names = |list: &[AssociationAudit]| -> Vec<String> {
            list.iter().map(|a| a.account.to_string()).collect()
        };
        let found = extremes(&audit, 2);
        let shown: Vec<(usize, Vec<String>, Vec<String>)> = found
            .iter()
            .map(|(depth, over, under)| (*depth, names(over), names(under)))
            .collect();
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shown,
            vec![
                (1, strings(&["b", "d"]), strings(&["f", "g"])),
                (2, vec![], vec![]),
                (3, vec![], strings(&["k"])),
            ]
        );
        let all = extremes(&audit, 10);
        assert_eq!(names(&all[0].1), ["b", "d", "c", "a"]);
        assert_eq!(names(&all[0].2), ["f", "g", "e"]);
        assert!(extremes(&audit, 0)
            .iter()
            .all(|(_, o, u)| o.is_empty() && u.is_empty()));
    }

    /// Where the cut falls among equal errors, the names decide, whatever
    /// order the level lists them in: of 40 associations with the same
    /// error behind two better ones, the first three by name (over-served)
    /// and the last three (under-served); by hand.
    #[test]
    fn a_cut_among_equal_errors_goes_by_name() {
        let mut associations = Vec::new();
        for i in (0..40).rev() {
            associations.push(association(&format!("t{i:02}"), 1, Some(0.25)));
            associations.push(association(&format!("u{i:02}"), 1, Some(-0.25)));
        }
        associations.push(association("z", 1, Some(0.5)));
        associations.push(association("y", 1, Some(0.5)));
        associations.push(association("a", 1, Some(-0.5)));
        let audit = audit_of(associations);
        let found = extremes(&audit, 5);
        let names = |list: &[AssociationAudit]| -> Vec<String> {
            list.iter().map(|a| a.account.to_string()).collect()
        };
        assert_eq!(names(&found[0].1), ["y", "z", "t00", "t01", "t02"]);
        assert_eq!(names(&found[0].2), ["a", "u39", "u38", "u37", "u36"]);
    }
}
