//! A map kept as one sorted vector: the committed offsets of a group (topic
//! → partition → offset). Same ordered iteration as a `BTreeMap`, a
//! fraction of the memory for the few entries a typical group holds: a
//! `BTreeMap` leaf node reserves room for 11 entries, so one topic with 4
//! partitions cost ~1.3 KiB as nested `BTreeMap`s and ~350 bytes here.
//! Lookups are binary searches; inserting a new key shifts the tail, which
//! is cheap at the sizes groups have (partitions arrive mostly in order).

use std::borrow::Borrow;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap(Vec::new())
    }
}

/// Where a key would sit if the map's keys were exactly 0, 1, 2, …: a
/// group's partitions usually are, so a lookup checks that slot first and
/// touches one entry instead of a binary search's ~10 (cache misses, with
/// a million offsets resident).
pub trait SlotHint {
    fn slot(&self) -> Option<usize> {
        None
    }
}

impl SlotHint for str {}
impl SlotHint for String {}

impl SlotHint for i32 {
    fn slot(&self) -> Option<usize> {
        usize::try_from(*self).ok()
    }
}

impl SlotHint for u8 {
    fn slot(&self) -> Option<usize> {
        Some(usize::from(*self))
    }
}

impl<K: Ord + SlotHint, V> VecMap<K, V> {
    fn find<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + SlotHint + ?Sized,
    {
        if let Some(i) = key.slot() {
            if self.0.get(i).is_some_and(|(k, _)| k.borrow() == key) {
                return Ok(i);
            }
        }
        self.0.binary_search_by(|(k, _)| k.borrow().cmp(key))
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + SlotHint + ?Sized,
    {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + SlotHint + ?Sized,
    {
        self.find(key).ok().map(move |i| &mut self.0[i].1)
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Ord + SlotHint + ?Sized,
    {
        let i = self.find(key).ok()?;
        let (_, v) = self.0.remove(i);
        if self.0.len() <= self.0.capacity() / 4 {
            self.0.shrink_to_fit();
        }
        Some(v)
    }

    /// The value under `key`, inserted as `V::default()` if missing.
    pub fn get_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key, V::default()));
                i
            }
        };
        &mut self.0[i].1
    }
}

impl<K, V> VecMap<K, V> {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }

    /// Drops spare capacity (after a bulk load).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
}

impl<'a, K, V> IntoIterator for &'a VecMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests;
