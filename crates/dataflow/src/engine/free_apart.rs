//! A replaced whole-queue `top` read freed on a thread of its own
//! (`Engine::discard`), in pieces and at the lowest scheduling priority:
//! freeing a million jobs at once took worker 0 about 200 ms, which the next
//! command waited behind (`perf/results/2026-11-30-history-by-row-s30.md`),
//! and on a thread at the process's priority it held a core and the
//! allocator while the reads beside it (`audit`, the table) waited
//! (`perf/results/2026-11-30-table-reads-s33.md`).

use fairflow_model::report::SharedJobs;

use crate::thread_priority::{lower_this_thread, FREE_THREAD_NICE};

/// Replaced `top` reads of at least this many jobs are freed here, not on
/// worker 0's.
pub(super) const FREE_APART_MIN_JOBS: usize = 16_384;

/// The thread frees such a read this many jobs at a time, pausing
/// [`FREE_PIECE_PAUSE`] between pieces.
const FREE_PIECE_JOBS: usize = 4_096;

/// The pause between the pieces of a freed read.
const FREE_PIECE_PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// Free `freed` on a thread of its own, at nice [`FREE_THREAD_NICE`]
/// (Linux); a thread that cannot start drops the read here.
pub(super) fn free_apart(freed: SharedJobs) {
    let _ = std::thread::Builder::new()
        .name("fairflow-free".into())
        .spawn(move || {
            // A thread left at the process's priority still frees.
            let _ = lower_this_thread(FREE_THREAD_NICE);
            freed.free_in_pieces(FREE_PIECE_JOBS, FREE_PIECE_PAUSE)
        });
}
