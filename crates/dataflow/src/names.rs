//! Interned names: the integer ids that dataflow records carry instead of
//! strings, and the one table that turns a job's id back into its name.
//!
//! - Accounts, user associations, partitions and QOS are interned by *name*
//!   ([`Interner`]): an id is never reused, so a job that names an account or
//!   an association that does not exist (yet, or any more) still meets its
//!   facts when they appear, exactly as the names did. Their number is the
//!   number of distinct names the site ever used.
//! - Jobs are interned while they are active ([`JobIds`]): a job's id is
//!   released when the job leaves the priority inputs, and reused only at a
//!   later batch, so one batch never retracts one job and inserts another
//!   under the same id. The table of active jobs' names is shared with the
//!   worker that serves reads ([`JobNames`]): the queue's order breaks ties
//!   by job name, and results name their job.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use crate::types::JobId;
use fairflow_model::report::JobIdOrder;

/// Append-only interning of names: the same name always gets the same id.
#[derive(Debug, Clone)]
pub struct Interner<K> {
    ids: HashMap<K, u32>,
    names: Vec<K>,
}

impl<K: Clone + Eq + Hash> Default for Interner<K> {
    fn default() -> Self {
        Interner {
            ids: HashMap::new(),
            names: Vec::new(),
        }
    }
}

impl<K: Clone + Eq + Hash> Interner<K> {
    /// `name`'s id, interning it if new.
    pub fn intern(&mut self, name: &K) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        self.names.push(name.clone());
        self.ids.insert(name.clone(), id);
        id
    }

    /// The name of `id`.
    pub fn name(&self, id: u32) -> Option<&K> {
        self.names.get(id as usize)
    }

    /// How many names were interned (ids are `0..len`).
    pub fn len(&self) -> usize {
        self.names.len()
    }
}

impl Interner<String> {
    /// `name`'s id, interning it if new (allocating only then).
    pub fn intern_str(&mut self, name: &str) -> u32 {
        match self.ids.get(name) {
            Some(id) => *id,
            None => self.intern(&name.to_string()),
        }
    }
}

/// The driver's name interners (everything but jobs).
#[derive(Debug, Clone)]
pub struct Names {
    /// Account names.
    pub accounts: Interner<String>,
    /// User associations by `(account, user)`.
    pub assocs: Interner<(String, String)>,
    /// Partition and QOS names (`""` is `types::NONE`).
    pub labels: Interner<String>,
}

impl Default for Names {
    fn default() -> Self {
        let mut labels = Interner::default();
        labels.intern(&String::new());
        Names {
            accounts: Interner::default(),
            assocs: Interner::default(),
            labels,
        }
    }
}

/// The active jobs' names by id, shared by the driver (which writes it
/// between batches) and the worker that serves reads.
#[derive(Debug, Clone, Default)]
pub struct JobNames(Arc<RwLock<Vec<Option<Arc<str>>>>>);

impl JobNames {
    /// The name of job `id` (`None` for a released id).
    pub fn get(&self, id: JobId) -> Option<Arc<str>> {
        let table = self.0.read().unwrap_or_else(PoisonError::into_inner);
        table.get(id as usize).cloned().flatten()
    }

    /// The order of job `id` whose row keeps `id_number` (`JobRow`: the
    /// number of a plain id, else 0): the number without a look at the
    /// table, else [`JobNames::order`].
    pub fn order_of(&self, id: JobId, id_number: u64) -> JobIdOrder {
        match id_number {
            0 => self.order(id),
            number => JobIdOrder::Number(number),
        }
    }

    /// The order of job `id`'s name (`JobIdOrder`; `""` for a released
    /// id), without a copy of the name when it is a plain number.
    pub fn order(&self, id: JobId) -> JobIdOrder {
        let table = self.0.read().unwrap_or_else(PoisonError::into_inner);
        match table.get(id as usize) {
            Some(Some(name)) => JobIdOrder::of(name),
            _ => JobIdOrder::Text(Arc::from("")),
        }
    }

    pub(crate) fn set(&self, id: JobId, name: Option<Arc<str>>) {
        let mut table = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let slot = id as usize;
        if table.len() <= slot {
            table.resize(slot + 1, None);
        }
        table[slot] = name;
    }
}

/// Interning of active jobs with reusable ids; see the module documentation.
#[derive(Debug, Default)]
pub struct JobIds {
    ids: HashMap<Arc<str>, JobId>,
    names: JobNames,
    next: JobId,
    /// Released ids, usable from the next batch on.
    released: Vec<JobId>,
    /// Ids free for this batch.
    free: Vec<JobId>,
}

impl JobIds {
    /// An empty table whose names are published in `names`.
    pub fn new(names: JobNames) -> Self {
        JobIds {
            names,
            ..JobIds::default()
        }
    }

    /// The shared table of names.
    pub fn names(&self) -> &JobNames {
        &self.names
    }

    /// `name`'s id, if the job is interned.
    pub fn get(&self, name: &str) -> Option<JobId> {
        self.ids.get(name).copied()
    }

    /// Room for `jobs` names in all (a restore interns every job at once:
    /// the table is sized once instead of doubling its way there).
    pub fn reserve_for(&mut self, jobs: usize) {
        self.ids.reserve(jobs.saturating_sub(self.ids.len()));
    }

    /// `name`'s id, interning it if new.
    pub fn intern(&mut self, name: &str) -> JobId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.free.pop().unwrap_or_else(|| {
            let id = self.next;
            self.next = self
                .next
                .checked_add(1)
                .expect("fewer than 2^32 active jobs");
            id
        });
        let name: Arc<str> = Arc::from(name);
        self.names.set(id, Some(name.clone()));
        self.ids.insert(name, id);
        id
    }

    /// Forget `name`; its id becomes free at the next [`JobIds::next_batch`].
    pub fn release(&mut self, name: &str) {
        if let Some(id) = self.ids.remove(name) {
            self.names.set(id, None);
            self.released.push(id);
        }
    }

    /// A batch was sent: the ids released before it may be reused.
    pub fn next_batch(&mut self) {
        self.free.append(&mut self.released);
    }
}
