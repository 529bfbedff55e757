//! A map from paths to entries for a million of them: one sorted vector
//! (what a dirstate file loads into, and what entries inserted in path
//! order are appended to), plus a small ordered map of the changes made
//! since, folded back into the vector once it grows. A `BTreeMap` of the
//! same entries takes about twice the memory when grown entry by entry
//! (half-full nodes), and building one from a loaded file needs the file's
//! entries in a vector first: two copies at once.

use std::collections::BTreeMap;

pub struct PathMap<V> {
    /// Sorted by path, each path once.
    base: Vec<(Vec<u8>, V)>,
    /// Changes to `base`: `Some` for a path `base` lacks, `None` for a path
    /// of `base` that was removed. Entries of `base` are changed in place.
    over: BTreeMap<Vec<u8>, Option<V>>,
    removed: usize,
}

impl<V> Default for PathMap<V> {
    fn default() -> Self {
        PathMap { base: Vec::new(), over: BTreeMap::new(), removed: 0 }
    }
}

impl<V> PathMap<V> {
    /// From entries sorted by path, each path once (checked: a file could be damaged).
    pub fn from_sorted(base: Vec<(Vec<u8>, V)>) -> Option<PathMap<V>> {
        base.windows(2).all(|w| w[0].0 < w[1].0).then(|| PathMap { base, over: BTreeMap::new(), removed: 0 })
    }

    pub fn len(&self) -> usize {
        self.base.len() + self.over.len() - 2 * self.removed
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(&self, path: &[u8]) -> Result<usize, usize> {
        self.base.binary_search_by(|(p, _)| p.as_slice().cmp(path))
    }

    pub fn get(&self, path: &[u8]) -> Option<&V> {
        match self.over.get(path) {
            Some(change) => change.as_ref(),
            None => self.position(path).ok().map(|i| &self.base[i].1),
        }
    }

    pub fn get_mut(&mut self, path: &[u8]) -> Option<&mut V> {
        if self.over.contains_key(path) {
            return self.over.get_mut(path).and_then(|change| change.as_mut());
        }
        let i = self.position(path).ok()?;
        Some(&mut self.base[i].1)
    }

    pub fn contains_key(&self, path: &[u8]) -> bool {
        self.get(path).is_some()
    }

    /// Sets the entry of `path`; returns the one it replaces.
    pub fn insert(&mut self, path: Vec<u8>, value: V) -> Option<V> {
        match self.position(&path) {
            Ok(i) => {
                if self.over.remove(&path).is_some() {
                    // A removal shadowed it: the entry lives in `base` again, so `over` holds no `Some` for a path of `base`.
                    self.removed -= 1;
                    self.base[i].1 = value;
                    return None;
                }
                Some(std::mem::replace(&mut self.base[i].1, value))
            }
            Err(i) if i == self.base.len() && self.over.range::<[u8], _>((std::ops::Bound::Excluded(path.as_slice()), std::ops::Bound::Unbounded)).next().is_none() => {
                // Past every path: appended (how a checkout or a first add fills it).
                let old = self.over.remove(&path).flatten();
                self.base.push((path, value));
                old
            }
            Err(_) => {
                let old = self.over.insert(path, Some(value)).flatten();
                self.fold_if_large();
                old
            }
        }
    }

    pub fn remove(&mut self, path: &[u8]) -> Option<V>
    where
        V: Clone,
    {
        if let Some(change) = self.over.get(path) {
            return match change {
                // Already removed.
                None => None,
                Some(_) => self.over.remove(path).flatten(),
            };
        }
        let i = self.position(path).ok()?;
        self.over.insert(path.to_vec(), None);
        self.removed += 1;
        let old = self.base[i].1.clone();
        self.fold_if_large();
        Some(old)
    }

    /// Folds the changes into the sorted vector once they are many, so that
    /// they never cost more memory than a fraction of the vector.
    fn fold_if_large(&mut self) {
        if self.over.len() > 4096.max(self.base.len() / 8) {
            self.fold();
        }
    }

    /// Brings every change into the sorted vector, so that [`PathMap::sorted`] sees it.
    pub fn fold(&mut self) {
        if self.over.is_empty() {
            return;
        }
        let over = std::mem::take(&mut self.over);
        let base = std::mem::take(&mut self.base);
        let mut merged = Vec::with_capacity(base.len() + over.len() - 2 * self.removed);
        let mut changes = over.into_iter().peekable();
        for (path, value) in base {
            while let Some((p, change)) = changes.next_if(|(p, _)| *p < path) {
                merged.extend(change.map(|v| (p, v)));
            }
            match changes.next_if(|(p, _)| *p == path) {
                // Removed (a `Some` never shadows a path of `base`).
                Some(_) => {}
                None => merged.push((path, value)),
            }
        }
        merged.extend(changes.filter_map(|(p, change)| change.map(|v| (p, v))));
        self.base = merged;
        self.removed = 0;
    }

    /// The entries as one slice in path order, when no change is left to
    /// fold in (as loaded, or after [`PathMap::fold`]): positions in it
    /// name entries for [`PathMap::sorted_value_mut`].
    pub fn sorted(&self) -> Option<&[(Vec<u8>, V)]> {
        self.over.is_empty().then_some(self.base.as_slice())
    }

    /// The value at position `i` of [`PathMap::sorted`], while that holds.
    pub fn sorted_value_mut(&mut self, i: usize) -> Option<&mut V> {
        match self.over.is_empty() {
            true => self.base.get_mut(i).map(|(_, v)| v),
            false => None,
        }
    }

    pub fn iter(&self) -> Iter<'_, V> {
        Iter { base: self.base.iter().peekable(), over: self.over.iter().peekable(), remaining: self.len() }
    }

    pub fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.iter().map(|(p, _)| p)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Every entry, mutably, in path order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Vec<u8>, &mut V)> {
        self.fold();
        self.base.iter_mut().map(|(p, v)| (&*p, v))
    }
}

impl<V> FromIterator<(Vec<u8>, V)> for PathMap<V> {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, V)>>(iter: I) -> Self {
        let mut map = PathMap::default();
        for (p, v) in iter {
            map.insert(p, v);
        }
        map
    }
}

/// The entries in path order: the vector's and the changes' merged.
pub struct Iter<'a, V> {
    base: std::iter::Peekable<std::slice::Iter<'a, (Vec<u8>, V)>>,
    over: std::iter::Peekable<std::collections::btree_map::Iter<'a, Vec<u8>, Option<V>>>,
    /// Exact, so that an encoder can write the count first.
    remaining: usize,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a Vec<u8>, &'a V);

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let from_base = match (self.base.peek(), self.over.peek()) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((b, _)), Some((o, _))) => b < *o,
            };
            if from_base {
                let (p, v) = self.base.next()?;
                self.remaining -= 1;
                return Some((p, v));
            }
            let (p, change) = self.over.next()?;
            match change {
                Some(v) => {
                    self.remaining -= 1;
                    return Some((p, v));
                }
                // A removal: skip the path of `base` it shadows.
                None => {
                    self.base.next_if(|(b, _)| b == p);
                }
            }
        }
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

impl<'a, V> IntoIterator for &'a PathMap<V> {
    type Item = (&'a Vec<u8>, &'a V);
    type IntoIter = Iter<'a, V>;
    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, u32),
        Remove(Vec<u8>),
        Fold,
    }

    fn op() -> impl Strategy<Value = Op> {
        let path = proptest::collection::vec(b'a'..b'e', 0..4);
        prop_oneof![
            4 => (path.clone(), any::<u32>()).prop_map(|(p, v)| Op::Insert(p, v)),
            2 => path.prop_map(Op::Remove),
            1 => Just(Op::Fold),
        ]
    }

    proptest! {
        /// Behaves as a BTreeMap under any sequence of changes, from any start.
        #[test]
        fn matches_a_btreemap(start in proptest::collection::btree_map(proptest::collection::vec(b'a'..b'e', 0..4), any::<u32>(), 0..40), ops in proptest::collection::vec(op(), 0..200)) {
            let mut model = start.clone();
            let mut map = PathMap::from_sorted(start.into_iter().collect()).unwrap();
            for op in ops {
                match op {
                    Op::Insert(p, v) => prop_assert_eq!(map.insert(p.clone(), v), model.insert(p, v)),
                    Op::Remove(p) => prop_assert_eq!(map.remove(&p), model.remove(&p)),
                    Op::Fold => map.fold(),
                }
                prop_assert_eq!(map.len(), model.len());
                let got: Vec<(&Vec<u8>, &u32)> = map.iter().collect();
                let want: Vec<(&Vec<u8>, &u32)> = model.iter().collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(map.iter().size_hint(), (model.len(), Some(model.len())));
                for p in model.keys() {
                    prop_assert_eq!(map.get(p), model.get(p));
                }
            }
            for (_, v) in map.iter_mut() {
                *v = v.wrapping_add(1);
            }
            let got: Vec<(Vec<u8>, u32)> = map.iter().map(|(p, v)| (p.clone(), *v)).collect();
            let want: Vec<(Vec<u8>, u32)> = model.iter().map(|(p, v)| (p.clone(), v.wrapping_add(1))).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn entries_in_path_order_are_appended_and_unsorted_ones_refused() {
        let mut map = PathMap::default();
        for i in 0..10_000u32 {
            map.insert(format!("{i:05}").into_bytes(), i);
        }
        assert!(map.over.is_empty(), "inserts in path order go to the vector");
        assert_eq!(map.len(), 10_000);
        assert!(PathMap::from_sorted(vec![(b"b".to_vec(), 1), (b"a".to_vec(), 2)]).is_none());
        assert!(PathMap::from_sorted(vec![(b"a".to_vec(), 1), (b"a".to_vec(), 2)]).is_none());
    }
}
