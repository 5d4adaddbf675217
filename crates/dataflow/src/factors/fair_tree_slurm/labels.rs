//! Order labels of a group's members (order maintenance).
//!
//! A group's members in order have increasing `u64` labels. A member that
//! moves, or joins, takes a label between its new neighbours' (their
//! midpoint; `assign_labels` keeps the old one where it still fits) and
//! every other member keeps its own, so a move across a thousand siblings
//! sends one slot and perhaps its neighbours', where a position (the users
//! before a member) would change for all thousand. When a gap is used up,
//! a window around it doubles until its members can be spread
//! `RELABEL_MIN_GAP` apart (`relabel_around`), and only the window is sent
//! again: with 64-bit labels that takes dozens of insertions into one gap.
//! The queue derives prefixes, firsts and runs from the labels.
//! `FairShare=parent` accounts are members (`LevelFS` `NO_VAL`, no users).

use super::placed::Placed;

/// The bounds of the label space: labels lie strictly between them.
pub(super) const LABEL_FLOOR: u64 = 0;
pub(super) const LABEL_CEILING: u64 = u64::MAX;

/// The least spacing a relabelled window leaves between its labels (so
/// that many later insertions fit in each gap before the next relabelling).
pub(super) const RELABEL_MIN_GAP: u64 = 1 << 20;

/// The label just before `order[index]` (the floor at the front).
pub(super) fn label_before(order: &[Placed], index: usize) -> u64 {
    index
        .checked_sub(1)
        .map_or(LABEL_FLOOR, |before| order[before].label)
}

/// The label of `order[index]` (the ceiling past the end).
pub(super) fn label_at(order: &[Placed], index: usize) -> u64 {
    order
        .get(index)
        .map_or(LABEL_CEILING, |placed| placed.label)
}

/// Give `order[from..to]` labels evenly spaced strictly between `low` and
/// `high`; false (nothing changed) if there is no room.
pub(super) fn spread(order: &mut [Placed], from: usize, to: usize, low: u64, high: u64) -> bool {
    let gap = (high - low) / (to - from + 1) as u64;
    if gap == 0 {
        return false;
    }
    for (step, placed) in order[from..to].iter_mut().enumerate() {
        placed.label = low + gap * (step as u64 + 1);
    }
    true
}

/// Relabel a window around `order[from..to]`, whose labels do not fit
/// between their neighbours': the window doubles on each side until its
/// members can be spaced `RELABEL_MIN_GAP` apart (or it is the whole
/// group). The members outside keep their labels. Every label before
/// `from` is final; after `to`, those `settled` says are (the window ends
/// before one, or at the end). Returns the window.
pub(super) fn relabel_around(
    order: &mut [Placed],
    from: usize,
    to: usize,
    settled: impl Fn(&Placed) -> bool,
) -> std::ops::Range<usize> {
    let mut reach = 1;
    loop {
        let start = from.saturating_sub(reach);
        let mut end = (to + reach).min(order.len());
        while end < order.len() && !settled(&order[end]) {
            end += 1;
        }
        let (low, high) = (label_before(order, start), label_at(order, end));
        let whole = start == 0 && end == order.len();
        if (high - low) / (end - start + 1) as u64 >= RELABEL_MIN_GAP || whole {
            let spaced = spread(order, start, end, low, high);
            debug_assert!(spaced, "a group has fewer members than labels");
            return start..end;
        }
        reach *= 2;
    }
}

/// Give the members of a group's new order increasing labels, keeping
/// every label that can be kept cheaply: an anchored member keeps its own
/// (the anchored members' labels increase along the order); another keeps
/// its label if it lies above the last kept label and below the next
/// anchored member's; the members left take labels spread between their
/// neighbours', or a window around them is relabelled. Only the members
/// whose labels change (those that moved, and a relabelled window) get a
/// new slot.
pub(super) fn assign_labels(order: &mut [Placed]) {
    let len = order.len();
    // The label of the next anchored member after each position.
    let mut next_anchor = vec![LABEL_CEILING; len];
    let mut ceiling = LABEL_CEILING;
    for index in (0..len).rev() {
        next_anchor[index] = ceiling;
        if order[index].anchored {
            ceiling = order[index].label;
        }
    }
    let mut low = LABEL_FLOOR;
    for (index, placed) in order.iter_mut().enumerate() {
        if !placed.anchored && placed.label > low && placed.label < next_anchor[index] {
            placed.anchored = true;
        }
        if placed.anchored {
            low = placed.label;
        }
    }
    let mut index = 0;
    while index < len {
        if order[index].anchored {
            order[index].anchored = false;
            index += 1;
            continue;
        }
        let end = index + order[index..].iter().take_while(|p| !p.anchored).count();
        let (low, high) = (label_before(order, index), label_at(order, end));
        let done = if spread(order, index, end, low, high) {
            end
        } else {
            relabel_around(order, index, end, |placed| placed.anchored).end
        };
        for placed in &mut order[index..done] {
            placed.anchored = false;
        }
        index = done;
    }
}
