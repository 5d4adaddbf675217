//! [`SharedJobs`]: a read of the ranked queue that many readers share.
//!
//! An engine keeps its last `top` read (and, incrementally, the top `k'`
//! after each batch); a read with nothing changed since hands out the same
//! values. Each [`JobPriority`] holds several `String`s and a list of named
//! factors, so copying 100 of them costs tens of microseconds; a
//! [`SharedJobs`] is an `Arc` of the values and the range a reader sees, so a
//! copy (and a prefix or a page of it) costs one reference count, whatever
//! `k`. It reads as a slice (`Deref<Target = [JobPriority]>`) and serializes
//! as one; [`SharedJobs::into_vec`] gives owned values when a caller must
//! change them.

use std::ops::{Deref, Range};
use std::sync::Arc;

use super::JobPriority;

/// A shared, read-only run of job priorities (see the module
/// documentation): it derefs to `[JobPriority]`.
#[derive(Clone)]
pub struct SharedJobs {
    all: Arc<[JobPriority]>,
    range: Range<usize>,
}

impl SharedJobs {
    /// All of `all`, shared.
    pub fn new(all: Arc<[JobPriority]>) -> Self {
        let range = 0..all.len();
        SharedJobs { all, range }
    }

    /// The first `k` (all when there are fewer), sharing the same values.
    pub fn prefix(&self, k: usize) -> Self {
        let end = self.range.start + k.min(self.range.len());
        SharedJobs {
            all: self.all.clone(),
            range: self.range.start..end,
        }
    }

    /// Every job these share the allocation of, the ones skipped or cut
    /// included: what holding these keeps alive.
    pub fn held(&self) -> &[JobPriority] {
        &self.all
    }

    /// Without the first `n` (empty when there are fewer), sharing the same
    /// values.
    pub fn skip(&self, n: usize) -> Self {
        let start = self.range.start + n.min(self.range.len());
        SharedJobs {
            all: self.all.clone(),
            range: start..self.range.end,
        }
    }

    /// The values as an owned vector (a copy: callers that change the
    /// values, such as a selection's re-ranking, own theirs).
    pub fn into_vec(self) -> Vec<JobPriority> {
        self.to_vec()
    }

    /// Drop these, freeing what each job holds `jobs_per_piece` jobs at a
    /// time with `pause` between pieces, when nothing else shares them (else
    /// only this reference goes). For a thread that frees a whole queue's
    /// read (a million jobs, six or more allocations each) beside reads that
    /// allocate: freed at once it took a core and the allocator's locks for
    /// ~200 ms, and the read beside it waited.
    pub fn free_in_pieces(mut self, jobs_per_piece: usize, pause: std::time::Duration) {
        let Some(all) = Arc::get_mut(&mut self.all) else {
            return;
        };
        for piece in all.chunks_mut(jobs_per_piece.max(1)) {
            piece.iter_mut().for_each(JobPriority::free_owned);
            std::thread::sleep(pause);
        }
    }
}

impl Default for SharedJobs {
    fn default() -> Self {
        SharedJobs::from(Vec::new())
    }
}

impl From<Vec<JobPriority>> for SharedJobs {
    fn from(values: Vec<JobPriority>) -> Self {
        SharedJobs::new(values.into())
    }
}

impl Deref for SharedJobs {
    type Target = [JobPriority];

    fn deref(&self) -> &[JobPriority] {
        &self.all[self.range.clone()]
    }
}

impl<'a> IntoIterator for &'a SharedJobs {
    type Item = &'a JobPriority;
    type IntoIter = std::slice::Iter<'a, JobPriority>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for SharedJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for SharedJobs {
    fn eq(&self, other: &SharedJobs) -> bool {
        **self == **other
    }
}

impl PartialEq<Vec<JobPriority>> for SharedJobs {
    fn eq(&self, other: &Vec<JobPriority>) -> bool {
        **self == **other
    }
}

impl PartialEq<[JobPriority]> for SharedJobs {
    fn eq(&self, other: &[JobPriority]) -> bool {
        **self == *other
    }
}

impl PartialEq<SharedJobs> for Vec<JobPriority> {
    fn eq(&self, other: &SharedJobs) -> bool {
        **self == **other
    }
}

impl serde::Serialize for SharedJobs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::SharedJobs;
    use crate::report::tests::job;

    #[test]
    fn a_read_freed_in_pieces_leaves_every_other_holder_its_values() {
        let read = SharedJobs::from(vec![job("1", 9, &[]), job("2", 8, &[("p1", "", 8)])]);
        let page = read.skip(1);
        read.free_in_pieces(1, Duration::ZERO);
        // The page still shares the allocation: nothing of it was emptied.
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].job, "2");
        assert_eq!(page[0].pairs.len(), 1);
        assert_eq!(page.held()[0].job, "1");
        // The last holder frees it piece by piece, without a panic.
        page.free_in_pieces(1, Duration::ZERO);
    }
}
