//! [`NameMap`]: the state's maps by name (accounts, user associations),
//! ordered like a `BTreeMap` but looked up by hash.
//!
//! A `BTreeMap<String, _>` lookup compares the key with a dozen or more
//! stored names, each behind a pointer: at 100,000 associations the three
//! lookups a usage event makes (its check, its charge, the driver's read of
//! the new usage) cost microseconds in cache misses, most of a batch's time
//! in the driver. A `NameMap` keeps its values in a slab, a hash index from
//! key to slot for lookups, and a B-tree from key to slot for everything
//! that reads in key order (iteration, equality, serialisation, which is
//! byte-for-byte a `BTreeMap`'s). No hash order reaches a reader: the only
//! unordered walk is [`NameMap::values_mut`], for updates that do not
//! depend on each other.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;

use rustc_hash::FxHashMap;

/// An ordered map with hashed lookups; see the module documentation.
#[derive(Clone)]
pub struct NameMap<K, V> {
    /// The values; `None` in a slot that is free.
    slots: Vec<Option<V>>,
    /// Free slots, reused before the slab grows.
    free: Vec<u32>,
    /// Each key's slot, for lookups.
    index: FxHashMap<K, u32>,
    /// Each key's slot, in key order.
    order: BTreeMap<K, u32>,
}

impl<K, V> Default for NameMap<K, V> {
    fn default() -> Self {
        NameMap {
            slots: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            order: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Hash + Clone, V> NameMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        NameMap::default()
    }

    /// The value in an indexed slot.
    fn value_in(&self, slot: u32) -> &V {
        self.slots[slot as usize]
            .as_ref()
            .expect("an indexed slot holds a value")
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The value for `key`.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = *self.index.get(key)?;
        self.slots[slot as usize].as_ref()
    }

    /// The value for `key`, to change it.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = *self.index.get(key)?;
        self.slots[slot as usize].as_mut()
    }

    /// Is there an entry for `key`?
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.index.contains_key(key)
    }

    /// Set `key`'s value, returning the one it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(&slot) = self.index.get(&key) {
            return self.slots[slot as usize].replace(value);
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(value);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 entries");
                self.slots.push(Some(value));
                slot
            }
        };
        self.index.insert(key.clone(), slot);
        self.order.insert(key, slot);
        None
    }

    /// `key`'s value, inserting `make()` first if it has none.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let slot = match self.index.get(&key) {
            Some(&slot) => slot,
            None => {
                self.insert(key.clone(), make());
                self.index[&key]
            }
        };
        self.slots[slot as usize]
            .as_mut()
            .expect("an indexed slot holds a value")
    }

    /// Remove every entry.
    pub fn clear(&mut self) {
        *self = NameMap::new();
    }

    /// Remove `key`'s entry, returning its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Ord + Eq + ?Sized,
    {
        let slot = self.index.remove(key)?;
        self.order.remove(key);
        self.free.push(slot);
        self.slots[slot as usize].take()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator + '_ {
        self.order
            .iter()
            .map(|(key, &slot)| (key, self.value_in(slot)))
    }

    /// The entries whose keys lie in `range`, in key order.
    pub fn range<R>(&self, range: R) -> impl DoubleEndedIterator<Item = (&K, &V)> + '_
    where
        R: std::ops::RangeBounds<K>,
    {
        self.order
            .range(range)
            .map(|(key, &slot)| (key, self.value_in(slot)))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + '_ {
        self.order.keys()
    }

    /// The values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + '_ {
        self.iter().map(|(_, value)| value)
    }

    /// Every value, to change, in no particular order: for updates of each
    /// value on its own (what one value becomes never depends on another).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.slots.iter_mut().flatten()
    }

    /// Call `change` with every entry in key order, its value to change.
    pub fn for_each_mut(&mut self, mut change: impl FnMut(&K, &mut V)) {
        for (key, &slot) in &self.order {
            let value = self.slots[slot as usize]
                .as_mut()
                .expect("an indexed slot holds a value");
            change(key, value);
        }
    }
}

impl<K: Ord + Hash + Clone, V> FromIterator<(K, V)> for NameMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = NameMap::new();
        for (key, value) in entries {
            map.insert(key, value);
        }
        map
    }
}

impl<'a, K: Ord + Hash + Clone, V> IntoIterator for &'a NameMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = Box<dyn DoubleEndedIterator<Item = (&'a K, &'a V)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl<K, Q, V> std::ops::Index<&Q> for NameMap<K, V>
where
    K: Ord + Hash + Clone + Borrow<Q>,
    Q: Hash + Eq + ?Sized,
{
    type Output = V;

    fn index(&self, key: &Q) -> &V {
        self.get(key).expect("no entry for the key")
    }
}

impl<K: Ord + Hash + Clone, V: PartialEq> PartialEq for NameMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<K: Ord + Hash + Clone, V: Eq> Eq for NameMap<K, V> {}

impl<K: Ord + Hash + Clone + fmt::Debug, V: fmt::Debug> fmt::Debug for NameMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> serde::Serialize for NameMap<K, V>
where
    K: Ord + Hash + Clone + serde::Serialize,
    V: serde::Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de, K, V> serde::Deserialize<'de> for NameMap<K, V>
where
    K: Ord + Hash + Clone + serde::Deserialize<'de>,
    V: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = BTreeMap::<K, V>::deserialize(deserializer)?;
        Ok(entries.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::NameMap;

    #[test]
    fn it_reads_like_a_btree_map_after_inserts_removals_and_reuse_of_slots() {
        let mut map: NameMap<String, u32> = NameMap::new();
        let mut expected: BTreeMap<String, u32> = BTreeMap::new();
        // Names out of order, one replaced, two removed, one re-inserted
        // into a freed slot.
        for (name, value) in [("m", 1), ("c", 2), ("x", 3), ("a", 4), ("c", 5)] {
            assert_eq!(
                map.insert(name.to_string(), value),
                expected.insert(name.to_string(), value)
            );
        }
        assert_eq!(map.remove("m"), Some(1));
        expected.remove("m");
        assert_eq!(map.remove("m"), None);
        assert_eq!(map.remove("a"), Some(4));
        expected.remove("a");
        *map.get_or_insert_with("b".to_string(), || 6) += 1;
        *map.get_or_insert_with("x".to_string(), || 0) += 10;
        *expected.entry("b".to_string()).or_insert(6) += 1;
        *expected.entry("x".to_string()).or_insert(0) += 10;
        let read: Vec<(&String, &u32)> = map.iter().collect();
        assert_eq!(read, expected.iter().collect::<Vec<_>>());
        assert_eq!(map.len(), 3);
        assert_eq!(map["x"], 13);
        assert!(map.contains_key("b") && !map.contains_key("a"));
        assert_eq!(map.get("c"), Some(&5));
        // Ordered mutation sees the keys in order.
        let mut seen = Vec::new();
        map.for_each_mut(|key, value| {
            seen.push(key.clone());
            *value += 1;
        });
        assert_eq!(seen, ["b", "c", "x"]);
        assert_eq!(map.values().copied().collect::<Vec<_>>(), [8, 6, 14]);
    }

    #[test]
    fn it_serialises_byte_for_byte_as_a_btree_map_and_back() {
        let entries = [(("b", "u"), 2u64), (("a", "v"), 1), (("a", "u"), 3)];
        let map: NameMap<(String, String), u64> = entries
            .iter()
            .map(|&((a, u), n)| ((a.to_string(), u.to_string()), n))
            .collect();
        let tree: BTreeMap<(String, String), u64> = map
            .iter()
            .map(|(key, value)| (key.clone(), *value))
            .collect();
        let bytes = postcard::to_allocvec(&map).expect("serialises");
        assert_eq!(bytes, postcard::to_allocvec(&tree).expect("serialises"));
        let back: NameMap<(String, String), u64> = postcard::from_bytes(&bytes).expect("reads");
        assert_eq!(back, map);
    }
}
