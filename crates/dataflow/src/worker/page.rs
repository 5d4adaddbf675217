//! `top --offset`'s page counted across the shards (`Command::Page`): a
//! search over integer priority thresholds for a window that holds the
//! page, then the window itself (`priority::reader::page`).
//!
//! Let `A(t)` be the number of ranked jobs whose priority is above `t`
//! (every shard's [`PriorityReader::count_above`], summed): it does not
//! increase with `t`. The page of `k` entries from `offset` lies in the
//! window of priorities `[low + 1, high]` once `A(low) >= offset + k` and
//! `A(high) <= offset`: the jobs above `high` all come before the page, and
//! at least `offset + k` jobs come before any below `low + 1`. The search
//! starts from the first job's priority (`A = 0` there) and 0 (every job
//! but any at 0 above it) and narrows both ends by interpolation on the
//! counts, aimed a little beyond the page; where a side's interval shrinks
//! by less than a quarter (the counts are skewed: a dense middle, thin
//! tails) the next guess moves four times as far from the end that keeps
//! moving, and after three such probes it bisects. It stops when the
//! window holds few more jobs than the page (or cannot narrow): a handful
//! of counts on a queue whose priorities spread.
//! The window's jobs are then evaluated, ordered, and the page is cut after
//! the `A(high)` jobs above it; only its `k` jobs are evaluated whole.
//! Exact at any depth; `None` (the caller reads the slow way) where a shard
//! does not count (another model, `INCR_ONLY`, bounds that do not hold) or
//! the first entries are at the priority cap.

use fairflow_model::priority_formula::PRIORITY_MAX_U32;
use fairflow_model::report::JobPriority;
use fairflow_model::Time;
use timely::worker::Worker;

use super::shards::{ask_all, merge_ranked, Answer, Request, Shards};
use crate::priority::reader::page::WindowJob;
use crate::priority::PriorityReader;
use crate::thresholds::{self, Threshold};

/// Counts asked at most (each is one count of every shard).
const PROBES_MAX: usize = 40;

/// The page of `k` entries from `offset` of the queue at `now`, counted
/// (see the module documentation); `None` where it is not counted.
pub(super) fn page_counted(
    shards: &mut Option<Shards>,
    worker: &mut Worker,
    reader: &mut PriorityReader,
    (offset, k): (u64, u64),
    now: Time,
) -> Option<Vec<JobPriority>> {
    let first = merge_ranked(ask_all(shards, worker, reader, Request::Top(1, now)), 1);
    let Some(first) = first.first() else {
        return Some(Vec::new());
    };
    let mut above = |threshold: u64| {
        let answers = ask_all(shards, worker, reader, Request::CountAbove(threshold, now));
        let mut sum = 0u64;
        for answer in answers {
            let Answer::Above(Some(count)) = answer else {
                return None;
            };
            sum += count;
        }
        Some(sum)
    };
    let window = find_window(first.priority, (offset, k), &mut above)?;

    let mut jobs: Vec<WindowJob> = Vec::new();
    let mut jobs_above = 0u64;
    for answer in ask_all(shards, worker, reader, Request::Window(window, now)) {
        let Answer::Window(Some(shard)) = answer else {
            return None;
        };
        jobs_above += shard.above;
        jobs.extend(shard.jobs);
    }
    jobs.sort_by(WindowJob::queue_order);
    let skip = usize::try_from(offset.checked_sub(jobs_above)?).ok()?;
    let page: Vec<WindowJob> = jobs.into_iter().skip(skip).take(k as usize).collect();
    // Each shard evaluates its jobs of the page in the page's order; the
    // shards' lists merge back into it by the queue's key.
    let ids = page.iter().map(|job| job.job).collect();
    let request = Request::Jobs(ids, now);
    Some(merge_ranked(
        ask_all(shards, worker, reader, request),
        usize::MAX,
    ))
}

/// The window of priorities `(low, high)` (inclusive) that holds the page
/// of `k` entries from `offset`, from the counts `above(t)` of the jobs
/// above `t` and the first job's priority `first` (see the module
/// documentation); `None` where a count is not made or more than `offset`
/// entries are at the cap.
pub(crate) fn find_window(
    first: u64,
    (offset, k): (u64, u64),
    above: &mut impl FnMut(u64) -> Option<u64>,
) -> Option<(u64, u64)> {
    let page_end = offset.saturating_add(k);
    let start = first.min(PRIORITY_MAX_U32 - 1);
    let mut search = Search {
        offset,
        page_end,
        slack: k.saturating_mul(4).saturating_add(2048),
        low: None,
        high: (start, above(start)?),
        between: Vec::new(),
        stalls: [Stall::default(); 2],
    };
    if search.high.1 > offset {
        return None;
    }
    let mut probes = 1;
    // Every job is above -1: the count above 0 (all but any at 0) gives
    // the interpolation its other end.
    if start > 0 {
        let count = above(0)?;
        search.note(Side::Low, (0, count));
        probes += 1;
    }
    while probes < PROBES_MAX {
        let Some((side, threshold)) = search.next_probe() else {
            break;
        };
        let count = above(threshold)?;
        search.note(side, (threshold, count));
        probes += 1;
    }
    thresholds::decide(Threshold::PageWindowNarrowed, probes > 3);
    let low = search.low.map_or(0, |(threshold, _)| threshold + 1);
    Some((low, search.high.0))
}

/// The low end of the window (`Search::low`) or its high end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Low = 0,
    High = 1,
}

/// The search of [`find_window`]: thresholds with their counts.
struct Search {
    offset: u64,
    page_end: u64,
    /// The window may hold this many jobs beyond the page's.
    slack: u64,
    /// The highest threshold known with at least `page_end` jobs above it
    /// (`None`: none yet; the window reaches priority 0).
    low: Option<(u64, u64)>,
    /// The lowest threshold known with at most `offset` jobs above it.
    high: (u64, u64),
    /// Thresholds probed between them, ascending (their counts between
    /// `offset` and `page_end`, exclusive).
    between: Vec<(u64, u64)>,
    /// Per side, how its last probes fared.
    stalls: [Stall; 2],
}

/// A side's probes in a row that shrank its interval by less than a
/// quarter, and which end the last one moved (`true`: the low end).
#[derive(Clone, Copy, Default)]
struct Stall {
    probes: u32,
    low_end_moved: bool,
}

impl Search {
    /// The side's interval: the thresholds (as `i64`, `-1` below every
    /// priority) and counts at its ends (`u64::MAX` at `-1`).
    fn interval(&self, side: Side) -> ((i64, u64), (i64, u64)) {
        let low = self
            .low
            .map_or((-1, u64::MAX), |(t, count)| (t as i64, count));
        let high = (self.high.0 as i64, self.high.1);
        let widen = |(t, count): (u64, u64)| (t as i64, count);
        match side {
            Side::Low => (low, self.between.first().copied().map_or(high, widen)),
            Side::High => (self.between.last().copied().map_or(low, widen), high),
        }
    }

    /// The next threshold to count and the side it narrows; `None` when
    /// the window is narrow enough or cannot narrow.
    fn next_probe(&self) -> Option<(Side, u64)> {
        let (low, high) = (self.low, self.high);
        // Without a low end (the page runs past the queue's end) the count
        // above 0 stands for the window's jobs (any at 0 are in it too).
        let from_low = low.or(self.between.first().copied().filter(|&(t, _)| t == 0));
        if from_low.is_some_and(|(_, count)| count - high.1 <= self.slack) {
            return None;
        }
        let excess_low = low.map_or(u64::MAX, |(_, count)| count - self.page_end);
        let excess_high = self.offset - high.1;
        let width = |side| {
            let ((a, _), (b, _)) = self.interval(side);
            b - a
        };
        let side = match (width(Side::Low) > 1, width(Side::High) > 1) {
            (false, false) => return None,
            (true, false) => Side::Low,
            (false, true) => Side::High,
            (true, true) if excess_low >= excess_high => Side::Low,
            (true, true) => Side::High,
        };
        Some((side, self.probe_in(side)))
    }

    /// A threshold strictly inside the side's interval: interpolated on
    /// the counts toward the side's target (a little beyond the page, so
    /// that the end moves), or the midpoint.
    fn probe_in(&self, side: Side) -> u64 {
        let ((a, count_a), (b, count_b)) = self.interval(side);
        let target = match side {
            Side::Low => self.page_end.saturating_add(self.slack / 4),
            Side::High => self.offset.saturating_sub(self.slack / 4),
        };
        let midpoint = a + (b - a) / 2;
        let stall = self.stalls[side as usize];
        if a < 0 || count_a <= count_b || stall.probes >= 3 {
            return midpoint.clamp(a + 1, b - 1) as u64;
        }
        let fraction = count_a.saturating_sub(target) as f64 / (count_a - count_b) as f64;
        let mut guess = a + (fraction * (b - a) as f64).round() as i64;
        // The count is skewed (a dense middle, thin tails): after a stall
        // the guess moves away from the end that keeps moving, four times
        // as far per stalled probe.
        if stall.probes > 0 {
            let scale = 4i64.pow(stall.probes);
            guess = if stall.low_end_moved {
                a + (guess - a).max(1).saturating_mul(scale)
            } else {
                b - (b - guess).max(1).saturating_mul(scale)
            };
        }
        guess.clamp(a + 1, b - 1) as u64
    }

    /// Note a count at a threshold probed for `side`.
    fn note(&mut self, side: Side, (threshold, count): (u64, u64)) {
        let ((a, _), (b, _)) = self.interval(side);
        if count >= self.page_end {
            self.low = Some((threshold, count));
        } else if count <= self.offset {
            self.high = (threshold, count);
        } else {
            let at = self.between.partition_point(|&(t, _)| t < threshold);
            self.between.insert(at, (threshold, count));
        }
        let ((a2, _), (b2, _)) = self.interval(side);
        let stall = &mut self.stalls[side as usize];
        if (b2 - a2) * 4 > (b - a) * 3 {
            stall.probes += 1;
            stall.low_end_moved = a2 != a;
        } else {
            stall.probes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue given by its priorities, highest first: `A(t)` counted by
    /// hand from the list.
    fn counts_of(priorities: &[u64]) -> impl FnMut(u64) -> Option<u64> + '_ {
        move |t| Some(priorities.iter().filter(|&&p| p > t).count() as u64)
    }

    /// The window holds the page: at most `offset` jobs above its top, at
    /// least `offset + k` jobs at or above its bottom (or it reaches 0).
    fn holds_page(priorities: &[u64], (low, high): (u64, u64), offset: u64, k: u64) -> bool {
        let above_high = priorities.iter().filter(|&&p| p > high).count() as u64;
        let from_low = priorities.iter().filter(|&&p| p >= low).count() as u64;
        above_high <= offset && (from_low >= offset + k || low == 0)
    }

    #[test]
    fn the_window_holds_the_page_at_every_depth_of_a_hand_made_queue() {
        // 10,000 jobs: priorities 1..=5,000 twice (ties at every level).
        let mut priorities: Vec<u64> = (1..=5_000).chain(1..=5_000).collect();
        priorities.sort_unstable_by(|a, b| b.cmp(a));
        for offset in [0, 1, 99, 2_500, 5_000, 9_899, 9_990, 9_999, 10_000, 20_000] {
            let mut probes = 0;
            let mut counts = counts_of(&priorities);
            let mut above = |t| {
                probes += 1;
                counts(t)
            };
            let window = find_window(5_000, (offset, 100), &mut above).expect("counted");
            assert!(
                holds_page(&priorities, window, offset, 100),
                "{offset}: {window:?}"
            );
            // The slack is 4·100 + 2,048 jobs: the window is that narrow
            // (or at the queue's end), found in a few counts.
            let inside = (priorities.iter())
                .filter(|&&p| p >= window.0 && p <= window.1)
                .count();
            assert!(
                inside <= 100 + 2_448 + 2 || window.0 == 0,
                "{offset}: {inside}"
            );
            assert!(probes <= 16, "{offset}: {probes} counts");
        }
    }

    #[test]
    fn a_skewed_queue_is_narrowed_by_bisection_where_interpolation_stalls() {
        // 9,000 jobs at priority 1,000,000 down to 1 in a long thin tail:
        // interpolation alone would crawl.
        let mut priorities: Vec<u64> = vec![1_000_000; 9_000];
        priorities.extend((1..=3_000).map(|p| p * 3));
        priorities.sort_unstable_by(|a, b| b.cmp(a));
        for offset in [0, 8_950, 9_000, 10_500, 11_900] {
            let mut counts = counts_of(&priorities);
            let window = find_window(1_000_000, (offset, 100), &mut counts).expect("counted");
            assert!(
                holds_page(&priorities, window, offset, 100),
                "{offset}: {window:?}"
            );
        }
    }

    #[test]
    fn a_thin_tail_under_a_dense_queue_is_reached_in_few_counts() {
        // 100,000 jobs spread over priorities 467..=103,566 and a tail of
        // 200 over 1..=466 (the shape of `bench`'s queue): the last pages
        // lie in the tail, where the counts barely move.
        let mut priorities: Vec<u64> = (0..100_000u64)
            .map(|i| 467 + i * 103_099 / 99_999)
            .collect();
        priorities.extend((0..200u64).map(|i| 1 + i * 465 / 199));
        priorities.sort_unstable();
        let above =
            |t: u64| Some((priorities.len() - priorities.partition_point(|&p| p <= t)) as u64);
        let descending: Vec<u64> = priorities.iter().rev().copied().collect();
        for offset in [100_100, 100_000, 99_950, 50_000] {
            let mut probes = 0;
            let mut counted = |t| {
                probes += 1;
                above(t)
            };
            let window = find_window(103_566, (offset, 100), &mut counted).expect("counted");
            assert!(
                holds_page(&descending, window, offset, 100),
                "{offset}: {window:?}"
            );
            assert!(probes <= 10, "{offset}: {probes} counts");
        }
    }

    #[test]
    fn more_entries_at_the_cap_than_the_offset_are_not_counted() {
        let cap = PRIORITY_MAX_U32;
        let priorities = vec![cap, cap, cap, 7, 5];
        let mut counts = counts_of(&priorities);
        assert_eq!(find_window(cap, (1, 1), &mut counts), None);
        let mut counts = counts_of(&priorities);
        let window = find_window(cap, (3, 1), &mut counts).expect("counted");
        assert!(holds_page(&priorities, window, 3, 1));
        let mut declined = |_| None;
        assert_eq!(find_window(7, (0, 1), &mut declined), None);
    }
}
