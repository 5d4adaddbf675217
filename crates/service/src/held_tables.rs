//! The tables answers hold while they are sent: an answer in pieces reads
//! its rows from one table of one state (sprio's compact rows, the
//! fair-share table, a page of the queue) until its reader has taken the
//! last piece. Answers of the same state share that table, so a reader that
//! stops reading keeps it alive; readers of many different states would
//! each keep one. [`HeldTables`] counts the bytes of the distinct tables
//! held by answers being sent and refuses a new table past its cap, so what
//! slow readers can hold is bounded by the response budget's windows plus
//! this cap (or one table larger than the cap, held alone: a big cluster's
//! sprio still answers, one state at a time).
//!
//! The service's current state keeps its own tables cached in the backend
//! whatever readers do; what is counted here is what readers hold.

use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A table refused: the tables held for slow readers are at the cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "too many tables are held for slow readers (the service holds at most {cap_bytes} bytes of \
     them, {held_bytes} now): retry later"
)]
pub struct TablesFull {
    /// The cap, bytes.
    pub cap_bytes: usize,
    /// The bytes of the tables held when it was refused.
    pub held_bytes: usize,
}

/// The default cap, bytes: about one state's sprio rows at 100,000 jobs
/// beside the current one (twelve readers that never read, each at a state
/// of its own, then grow the service by under 100 MB: perf/results).
pub const DEFAULT_HELD_TABLE_BYTES: usize = 32 << 20;

/// A table an answer's pieces read while they are sent: who shares it (the
/// `Arc` the answers clone) and its size, bytes.
#[derive(Clone)]
pub struct SharedTable {
    rows: Arc<dyn Any + Send + Sync>,
    bytes: usize,
}

impl SharedTable {
    /// `rows`, of about `bytes` bytes.
    pub fn of<T: Any + Send + Sync>(rows: &Arc<T>, bytes: usize) -> Self {
        SharedTable {
            rows: rows.clone(),
            bytes,
        }
    }

    /// What identifies the table: its allocation (alive while held).
    fn identity(&self) -> *const () {
        Arc::as_ptr(&self.rows) as *const ()
    }

    /// Its size, bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl std::fmt::Debug for SharedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTable")
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

/// A table held for the answers being sent from it; the last of them to
/// be dropped releases it (and its bytes).
#[derive(Debug)]
pub struct TableHold {
    table: SharedTable,
}

/// See the module documentation. Clones share one count.
#[derive(Debug, Clone)]
pub struct HeldTables {
    held: Arc<Mutex<Vec<Weak<TableHold>>>>,
    cap_bytes: usize,
}

impl HeldTables {
    /// Tables of at most `cap_bytes` together (a table larger than that is
    /// held only alone).
    pub fn new(cap_bytes: usize) -> Self {
        HeldTables {
            held: Arc::new(Mutex::new(Vec::new())),
            cap_bytes,
        }
    }

    /// The cap, bytes.
    pub fn cap_bytes(&self) -> usize {
        self.cap_bytes
    }

    /// Hold `table` for one more answer: shared with the answers already
    /// holding it, else counted anew if it fits beside the tables held (or
    /// nothing else is held); `None` when it does not fit.
    pub fn hold(&self, table: SharedTable) -> Option<Arc<TableHold>> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let alive: Vec<Arc<TableHold>> = held.iter().filter_map(Weak::upgrade).collect();
        held.retain(|hold| hold.strong_count() > 0);
        if let Some(same) = alive
            .iter()
            .find(|hold| hold.table.identity() == table.identity())
        {
            return Some(same.clone());
        }
        let held_bytes: usize = alive.iter().map(|hold| hold.table.bytes).sum();
        if !self.fits(held_bytes, table.bytes) {
            return None;
        }
        let hold = Arc::new(TableHold { table });
        held.push(Arc::downgrade(&hold));
        Some(hold)
    }

    /// Whether a new table of `bytes` would be held beside those held now
    /// (what [`HeldTables::hold`] decides for a table no answer holds yet).
    pub fn admits(&self, bytes: usize) -> bool {
        self.fits(self.held_bytes(), bytes)
    }

    /// The one rule: a new table of `bytes` fits beside `held_bytes` of
    /// tables under the cap, or alone when nothing is held.
    fn fits(&self, held_bytes: usize, bytes: usize) -> bool {
        held_bytes == 0 || held_bytes.saturating_add(bytes) <= self.cap_bytes
    }

    /// Why a table was refused, for the reader.
    pub fn refusal(&self) -> TablesFull {
        TablesFull {
            cap_bytes: self.cap_bytes,
            held_bytes: self.held_bytes(),
        }
    }

    /// Bytes of the tables held now.
    pub fn held_bytes(&self) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.iter()
            .filter_map(Weak::upgrade)
            .map(|hold| hold.table.bytes)
            .sum()
    }
}

impl Default for HeldTables {
    fn default() -> Self {
        HeldTables::new(DEFAULT_HELD_TABLE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_counted_once_while_any_answer_holds_it() {
        let tables = HeldTables::new(100);
        let rows = Arc::new(vec![0u8; 60]);
        let first = tables.hold(SharedTable::of(&rows, 60)).expect("fits");
        let second = tables.hold(SharedTable::of(&rows, 60)).expect("shared");
        assert_eq!(tables.held_bytes(), 60, "one table, counted once");
        let other = Arc::new(vec![1u8; 60]);
        assert!(
            tables.hold(SharedTable::of(&other, 60)).is_none(),
            "60 + 60 bytes are past the cap of 100"
        );
        drop(first);
        assert_eq!(tables.held_bytes(), 60, "the second answer still holds it");
        drop(second);
        assert_eq!(tables.held_bytes(), 0);
        let _other = tables.hold(SharedTable::of(&other, 60)).expect("fits now");
        assert_eq!(tables.held_bytes(), 60);
    }

    #[test]
    fn a_table_larger_than_the_cap_is_held_alone() {
        let tables = HeldTables::new(100);
        let big = Arc::new(vec![0u8; 500]);
        let hold = tables.hold(SharedTable::of(&big, 500)).expect("held alone");
        assert_eq!(tables.held_bytes(), 500);
        let small = Arc::new(vec![0u8; 1]);
        assert!(tables.hold(SharedTable::of(&small, 1)).is_none());
        drop(hold);
        assert!(tables.hold(SharedTable::of(&small, 1)).is_some());
    }
}
