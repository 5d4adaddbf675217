//! Counters of the engine's size thresholds: each place where the engine
//! chooses between two ways of doing the same work by the size of what
//! changed counts which way it went, so that tests can show their streams
//! crossed every threshold with the production values (issue 37), not only
//! the small side. Process-wide relaxed atomics, one increment per decision
//! (at most once per batch, group or read): nothing on the answers' path.

use std::sync::atomic::{AtomicU64, Ordering};

/// A size threshold of the engine, named after the decision it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    /// The queue re-keyed most of its users at once and rebuilt its user
    /// orders whole (`BULK_REFRESH_MIN_USERS` users and a quarter of
    /// those entered), instead of a removal and an insertion each.
    BulkUserRefresh,
    /// The kept top was dropped because more jobs changed since it was kept
    /// than it re-evaluates (`MAX_CHANGED_JOBS`).
    KeptTopTooManyChanges,
    /// A Fair Tree group's pending position changes were applied in one
    /// merge, being more than `POSITION_CHANGES_ONE_BY_ONE`.
    GroupPositionsMerged,
    /// More members of a Fair Tree group (Slurm's ties) changed than a span
    /// update takes (`SPAN_UPDATE_MAX_SHARE`): the group is re-placed.
    GroupSpanTooWide,
    /// A top read asked for more jobs than the engine keeps current
    /// (`KEEP_TOP_MAX`).
    TopBeyondKept,
    /// A counted place was counted from bounds (`Queue::count_clearing`)
    /// rather than by the search, job by job (under: the search).
    PlaceFromBounds,
    /// A count from bounds under Fair Tree counted some group's users whole
    /// from the group's vectors (`Queue::count_clearing`), none of their
    /// jobs being in the band (under: every user was opened).
    GroupUsersWhole,
    /// A counted page's window of priorities was narrowed by more than
    /// three counts (`worker::page`: the queue held more jobs than the page
    /// and its slack; under: the first split held the page).
    PageWindowNarrowed,
}

const THRESHOLDS: usize = 8;

impl Threshold {
    /// Every threshold.
    pub const ALL: [Threshold; THRESHOLDS] = [
        Threshold::BulkUserRefresh,
        Threshold::KeptTopTooManyChanges,
        Threshold::GroupPositionsMerged,
        Threshold::GroupSpanTooWide,
        Threshold::TopBeyondKept,
        Threshold::PlaceFromBounds,
        Threshold::GroupUsersWhole,
        Threshold::PageWindowNarrowed,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// `[under, over]` decisions per threshold, since the process started.
static DECISIONS: [[AtomicU64; 2]; THRESHOLDS] = [
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
];

/// Decisions taken at `threshold` in this process so far: `[under, over]`
/// (under: the way for small changes; over: the threshold was crossed).
pub fn decisions(threshold: Threshold) -> [u64; 2] {
    let [under, over] = &DECISIONS[threshold.index()];
    [under.load(Ordering::Relaxed), over.load(Ordering::Relaxed)]
}

/// Count one decision at `threshold`: `over` when it was crossed.
pub(crate) fn decide(threshold: Threshold, over: bool) {
    DECISIONS[threshold.index()][usize::from(over)].fetch_add(1, Ordering::Relaxed);
}
