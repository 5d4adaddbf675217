//! A history step's record: every association's row at one step, by its
//! dense id in the [`Dictionary`], 44 bytes each ([`ROW_BYTES`]), so that
//! one association's value at a step is one read at a known offset. The
//! same encoding serves the store (`store`) and the batch path.
//!
//! A row, little-endian: `flags: u8` (bit 0 present at this step, bit 1 a
//! user association, bits 2..8 which of the optional cells below are set),
//! 3 bytes of padding, `rank: u32` (0: none), `raw_usage: u64`,
//! `norm_shares`, `norm_usage`, `effective_usage`, `level_fs`, `fairshare`
//! as `f32` (sshare prints six decimals; an `f32` keeps seven significant
//! digits, LevelFS's infinity included), `pending_jobs: u32`,
//! `best_queue_rank: u32` (0: no pending job). Bit 7 of `flags` says the
//! user's best entry lies beyond the rank depth `D` of the step's read (the
//! queue's first `D` entries, `history::read_step`); `best_queue_rank` then
//! holds `D`.

use std::collections::HashMap;

use fairflow_model::report::{FairshareRow, FairshareTable};
use fairflow_model::Time;

use super::StepRead;

/// Bytes of one association's row in a step record.
pub const ROW_BYTES: usize = 44;

/// An association: its account, and its user for a user association.
pub type AssociationKey = (String, Option<String>);

/// Every association seen, with a dense id in the order first seen.
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    ids: HashMap<AssociationKey, u32>,
    /// The keys by id.
    keys: Vec<AssociationKey>,
}

impl Dictionary {
    /// The id of `key`, if it was ever seen.
    pub fn id(&self, account: &str, user: Option<&str>) -> Option<u32> {
        self.ids
            .get(&(account.to_string(), user.map(str::to_string)))
            .copied()
    }

    /// Is `account` known (as an account row)?
    pub fn has_account(&self, account: &str) -> bool {
        self.id(account, None).is_some()
    }

    /// The id of `key`, given a new one if it is new (returned as `true`).
    pub fn intern(&mut self, key: &AssociationKey) -> (u32, bool) {
        if let Some(&id) = self.ids.get(key) {
            return (id, false);
        }
        let id = self.keys.len() as u32;
        self.ids.insert(key.clone(), id);
        self.keys.push(key.clone());
        (id, true)
    }

    /// Associations known.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// No association known?
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// One association at one step, as `/v1/history` answers it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HistoryPoint {
    /// The step's engine time, Unix seconds.
    pub t: Time,
    /// sshare's `RawUsage`: decayed billable TRES-seconds, truncated.
    pub raw_usage: u64,
    /// `NormShares`.
    pub norm_shares: Option<f64>,
    /// `NormUsage`.
    pub norm_usage: Option<f64>,
    /// `EffectvUsage`.
    pub effective_usage: Option<f64>,
    /// `LevelFS` (Fair Tree); `None` under other algorithms. Infinite (no
    /// usage) is JSON `null` too; `level_fs_infinite` says which.
    pub level_fs: Option<f64>,
    /// LevelFS is infinite (an association without usage).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub level_fs_infinite: bool,
    /// `FairShare`: the fair-share factor.
    pub fairshare: Option<f64>,
    /// The fair-share rank (module docs of `history`).
    pub rank: Option<u32>,
    /// A user association's pending (ranked) jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_jobs: Option<u32>,
    /// The best queue rank of its pending jobs (1: first in line), when it
    /// is within the rank depth `D` (`serve --history-rank-depth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_queue_rank: Option<u32>,
    /// `D` when the user has pending jobs but none within the queue's first
    /// `D` entries (`best_queue_rank` is then `null`): its best rank is
    /// beyond `D`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_queue_rank_beyond: Option<u32>,
}

/// One association's series: `/v1/history`'s answer and `fairflow
/// history --json`'s.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HistorySeries {
    /// The account.
    pub account: String,
    /// The user, for a user association.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The steps, oldest first.
    pub steps: Vec<HistoryPoint>,
}

const PRESENT: u8 = 1;
const USER: u8 = 1 << 1;
/// The best queue rank is beyond the rank depth, which the rank field holds.
const BEYOND: u8 = 1 << 7;
/// The optional cells' bits, in the order of their `f32`s.
const CELLS: [u8; 5] = [1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6];

/// Each row's fair-share rank (`history`'s module doc): user associations
/// ranked all together by factor; accounts with their siblings (rows of the
/// same parent, `fairflow_serve::audit::parents`) by LevelFS where the
/// algorithm has it, else by factor. Higher values rank first; rows without
/// one last; ties in table order. `root` has none.
fn rank_rows(table: &FairshareTable) -> Vec<Option<u32>> {
    let rows = &table.rows;
    let parents = fairflow_serve::audit::parents(rows);
    let key = |row: &FairshareRow| match (&row.user, row.level_fs) {
        (None, Some(level_fs)) => Some(level_fs),
        _ => row.fairshare,
    };
    let group = |index: usize| match rows[index].user {
        Some(_) => usize::MAX - 1,
        None => parents[index].unwrap_or(usize::MAX),
    };
    let mut order: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].depth > 0).collect();
    order.sort_by(|&a, &b| {
        group(a).cmp(&group(b)).then_with(|| {
            match (key(&rows[a]), key(&rows[b])) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
            .then(a.cmp(&b))
        })
    });
    let mut ranks = vec![None; rows.len()];
    let mut previous_group = None;
    let mut rank = 0u32;
    for index in order {
        if previous_group != Some(group(index)) {
            previous_group = Some(group(index));
            rank = 0;
        }
        rank += 1;
        ranks[index] = Some(rank);
    }
    ranks
}

/// Encode `step`'s rows by id, interning new associations in `dictionary`
/// (their keys returned, in id order, for the dictionary's file). Returns
/// the rows' bytes (as many rows as the dictionary then holds).
pub fn encode_step(step: &StepRead, dictionary: &mut Dictionary) -> (Vec<u8>, Vec<AssociationKey>) {
    let mut added = Vec::new();
    let ids: Vec<u32> = (step.table.rows.iter())
        .map(|row| {
            let key = (row.account.clone(), row.user.clone());
            let (id, new) = dictionary.intern(&key);
            if new {
                added.push(key);
            }
            id
        })
        .collect();
    let ranks = rank_rows(&step.table);
    let mut bytes = vec![0u8; dictionary.len() * ROW_BYTES];
    for (((index, row), id), rank) in step.table.rows.iter().enumerate().zip(ids).zip(ranks) {
        let out = &mut bytes[id as usize * ROW_BYTES..][..ROW_BYTES];
        let mut flags = PRESENT;
        let cells = [
            row.norm_shares,
            row.norm_usage,
            row.effective_usage,
            row.level_fs,
            row.fairshare,
        ];
        for (i, cell) in cells.iter().enumerate() {
            if let Some(value) = cell {
                flags |= CELLS[i];
                out[16 + 4 * i..20 + 4 * i].copy_from_slice(&(*value as f32).to_le_bytes());
            }
        }
        if row.user.is_some() {
            flags |= USER;
            let (count, mut best) = step.pending.get(index).copied().unwrap_or((0, 0));
            if count > 0 && best == 0 {
                flags |= BEYOND;
                best = step.rank_depth;
            }
            out[36..40].copy_from_slice(&count.to_le_bytes());
            out[40..44].copy_from_slice(&best.to_le_bytes());
        }
        out[0] = flags;
        out[4..8].copy_from_slice(&rank.unwrap_or(0).to_le_bytes());
        out[8..16].copy_from_slice(&row.raw_usage.to_le_bytes());
    }
    (bytes, added)
}

/// An `f32` as the `f64` it prints as (`0.70710677`, not
/// `0.7071067690849304`).
fn widen(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(value as f64)
}

/// The point of a row read at step `t` (`None`: the association was not in
/// the table then).
pub fn decode_row(t: Time, row: &[u8]) -> Option<HistoryPoint> {
    let row: &[u8; ROW_BYTES] = row.try_into().ok()?;
    let flags = row[0];
    if flags & PRESENT == 0 {
        return None;
    }
    let u32_at = |at: usize| u32::from_le_bytes(row[at..at + 4].try_into().expect("4 bytes"));
    let cell = |i: usize| {
        (flags & CELLS[i] != 0)
            .then(|| f32::from_le_bytes(row[16 + 4 * i..20 + 4 * i].try_into().expect("4 bytes")))
    };
    let user = flags & USER != 0;
    let level_fs = cell(3);
    let nonzero = |n: u32| (n > 0).then_some(n);
    Some(HistoryPoint {
        t,
        raw_usage: u64::from_le_bytes(row[8..16].try_into().expect("8 bytes")),
        norm_shares: cell(0).map(widen),
        norm_usage: cell(1).map(widen),
        effective_usage: cell(2).map(widen),
        level_fs: level_fs.filter(|v| v.is_finite()).map(widen),
        level_fs_infinite: level_fs.is_some_and(f32::is_infinite),
        fairshare: cell(4).map(widen),
        rank: nonzero(u32_at(4)),
        pending_jobs: user.then(|| u32_at(36)),
        best_queue_rank: (user && flags & BEYOND == 0)
            .then(|| nonzero(u32_at(40)))
            .flatten(),
        best_queue_rank_beyond: (user && flags & BEYOND != 0).then(|| u32_at(40)),
    })
}
