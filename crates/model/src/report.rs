//! What the engines answer, independent of how they computed it: the rows of
//! the fair-share table. The serving layer renders these; the oracle and the
//! incremental engine must produce equal values.

use crate::config::Algorithm;
use crate::event::Shares;
use crate::Time;

/// One association's row, as `sshare -a -l` shows it. `None` is an empty cell.
#[derive(Debug, Clone, PartialEq)]
pub struct FairshareRow {
    /// The account (for a user association, the account it is in).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// Depth in the association tree: root is 0.
    pub depth: usize,
    /// `RawShares`; `None` for root.
    pub raw_shares: Option<Shares>,
    /// `NormShares`.
    pub norm_shares: Option<f64>,
    /// `RawUsage`: decayed billable TRES-seconds, truncated.
    pub raw_usage: u64,
    /// `NormUsage`.
    pub norm_usage: Option<f64>,
    /// `EffectvUsage`.
    pub effective_usage: Option<f64>,
    /// `FairShare`.
    pub fairshare: Option<f64>,
    /// `LevelFS` (Fair Tree).
    pub level_fs: Option<f64>,
    /// Tickets (ticket-based).
    pub tickets: Option<u64>,
    /// This level's value (level-based), shown in hex.
    pub level_value: Option<u64>,
    /// The association's `priority_fs_raw` (level-based), shown in hex.
    pub fairshare_raw: Option<u64>,
}

impl FairshareRow {
    /// An empty row for an association; the algorithm fills in the cells.
    pub fn new(account: &str, user: Option<&str>, depth: usize) -> Self {
        FairshareRow {
            account: account.to_string(),
            user: user.map(str::to_string),
            depth,
            raw_shares: None,
            norm_shares: None,
            raw_usage: 0,
            norm_usage: None,
            effective_usage: None,
            fairshare: None,
            level_fs: None,
            tickets: None,
            level_value: None,
            fairshare_raw: None,
        }
    }
}

/// The whole fair-share table, in tree order (`root` first; each account
/// followed by its user associations, then its child accounts, depth first;
/// siblings by name).
#[derive(Debug, Clone, PartialEq)]
pub struct FairshareTable {
    /// The algorithm that computed it.
    pub algorithm: Algorithm,
    /// The time it is as of.
    pub as_of: Time,
    /// The rows.
    pub rows: Vec<FairshareRow>,
}
