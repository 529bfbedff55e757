//! A map from paths to entries for a million of them: one sorted run
//! (what a dirstate file loads into, and what entries inserted in path
//! order are appended to), plus a small ordered map of the changes made
//! since, folded back into the run once it grows. A `BTreeMap` of the
//! same entries takes about twice the memory when grown entry by entry
//! (half-full nodes), and building one from a loaded file needs the file's
//! entries in a vector first: two copies at once. The run keeps its paths
//! end to end in one buffer: a path of its own allocation costs a vector's
//! 24 bytes and the allocator's rounding beside its bytes (at a million
//! files of 15-byte paths, 56 MB where 23 MB do).

use std::collections::BTreeMap;

/// A map from paths (bytes) to `V`, iterated in path order, compact at a
/// million entries (see the module's doc).
pub struct PathMap<V> {
    /// The run's paths, sorted, each once, end to end.
    bytes: Vec<u8>,
    /// Where each path of the run ends in `bytes`.
    ends: Vec<usize>,
    /// The run's values, beside their paths.
    values: Vec<V>,
    /// Changes to the run: `Some` for a path it lacks, `None` for a path of
    /// it that was removed. Values of the run are changed in place.
    over: BTreeMap<Vec<u8>, Option<V>>,
    removed: usize,
}

impl<V> Default for PathMap<V> {
    fn default() -> Self {
        PathMap {
            bytes: Vec::new(),
            ends: Vec::new(),
            values: Vec::new(),
            over: BTreeMap::new(),
            removed: 0,
        }
    }
}

impl<V> PathMap<V> {
    /// From entries sorted by path, each path once (checked: a file could be damaged).
    pub fn from_sorted(entries: impl IntoIterator<Item = (Vec<u8>, V)>) -> Option<PathMap<V>> {
        let mut map = PathMap::default();
        for (path, value) in entries {
            if !map.push_sorted(&path, value) {
                return None;
            }
        }
        Some(map)
    }

    /// Appends an entry whose path sorts after every path of the map (as a
    /// file's entries are read); false, and nothing added, if it does not.
    pub fn push_sorted(&mut self, path: &[u8], value: V) -> bool {
        let run = self.run();
        let after_all = (run.is_empty() || run.path(run.len() - 1) < path)
            && self
                .over
                .last_key_value()
                .is_none_or(|(p, _)| p.as_slice() < path);
        if after_all {
            self.push(path, value);
        }
        after_all
    }

    fn push(&mut self, path: &[u8], value: V) {
        self.bytes.extend_from_slice(path);
        self.ends.push(self.bytes.len());
        self.values.push(value);
    }

    /// Room for `more` entries of `path_bytes` bytes of paths in all, beyond what the run holds.
    pub fn reserve(&mut self, more: usize, path_bytes: usize) {
        self.bytes.reserve(path_bytes);
        self.ends.reserve(more);
        self.values.reserve(more);
    }

    /// The run, without the changes not folded into it yet.
    fn run(&self) -> Sorted<'_, V> {
        Sorted {
            paths: Paths {
                bytes: &self.bytes,
                ends: &self.ends,
            },
            values: &self.values,
        }
    }

    /// How many paths it holds.
    pub fn len(&self) -> usize {
        self.values.len() + self.over.len() - 2 * self.removed
    }

    /// Whether it holds no path.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(&self, path: &[u8]) -> Result<usize, usize> {
        self.run().search_from(0, path)
    }

    /// The entry of `path`, if any.
    pub fn get(&self, path: &[u8]) -> Option<&V> {
        match self.over.get(path) {
            Some(change) => change.as_ref(),
            None => self.position(path).ok().map(|i| &self.values[i]),
        }
    }

    /// The entry of `path`, mutably, if any.
    pub fn get_mut(&mut self, path: &[u8]) -> Option<&mut V> {
        if self.over.contains_key(path) {
            return self.over.get_mut(path).and_then(|change| change.as_mut());
        }
        let i = self.position(path).ok()?;
        Some(&mut self.values[i])
    }

    /// Whether `path` has an entry.
    pub fn contains_key(&self, path: &[u8]) -> bool {
        self.get(path).is_some()
    }

    /// Sets the entry of `path`; returns the one it replaces.
    pub fn insert(&mut self, path: Vec<u8>, value: V) -> Option<V> {
        match self.position(&path) {
            Ok(i) => {
                if self.over.remove(&path).is_some() {
                    // A removal shadowed it: the entry lives in the run again, so `over` holds no `Some` for a path of the run.
                    self.removed -= 1;
                    self.values[i] = value;
                    return None;
                }
                Some(std::mem::replace(&mut self.values[i], value))
            }
            Err(i)
                if i == self.values.len()
                    && self
                        .over
                        .range::<[u8], _>((
                            std::ops::Bound::Excluded(path.as_slice()),
                            std::ops::Bound::Unbounded,
                        ))
                        .next()
                        .is_none() =>
            {
                // Past every path: appended (how a checkout or a first add fills it).
                let old = self.over.remove(&path).flatten();
                self.push(&path, value);
                old
            }
            Err(_) => {
                let old = self.over.insert(path, Some(value)).flatten();
                self.fold_if_large();
                old
            }
        }
    }

    /// Removes the entry of `path`; returns it, None if there was none.
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
        let old = self.values[i].clone();
        self.fold_if_large();
        Some(old)
    }

    /// Folds the changes into the run once they are many, so that they
    /// never cost more memory than a fraction of it.
    fn fold_if_large(&mut self) {
        if self.over.len() > 4096.max(self.values.len() / 8) {
            self.fold();
        }
    }

    /// Brings every change into the run, so that [`PathMap::sorted`] sees it.
    pub fn fold(&mut self) {
        if self.over.is_empty() {
            return;
        }
        let over = std::mem::take(&mut self.over);
        let (bytes, ends, values) = (
            std::mem::take(&mut self.bytes),
            std::mem::take(&mut self.ends),
            std::mem::take(&mut self.values),
        );
        let count = values.len() + over.len() - 2 * self.removed;
        let added: usize = over
            .iter()
            .filter(|(_, c)| c.is_some())
            .map(|(p, _)| p.len())
            .sum();
        self.reserve(count, bytes.len() + added);
        let mut changes = over.into_iter().peekable();
        let mut start = 0;
        for (end, value) in ends.into_iter().zip(values) {
            let path = &bytes[start..end];
            start = end;
            while let Some((p, change)) = changes.next_if(|(p, _)| p.as_slice() < path) {
                if let Some(v) = change {
                    self.push(&p, v);
                }
            }
            match changes.next_if(|(p, _)| p.as_slice() == path) {
                // Removed (a `Some` never shadows a path of the run).
                Some(_) => {}
                None => self.push(path, value),
            }
        }
        for (p, change) in changes {
            if let Some(v) = change {
                self.push(&p, v);
            }
        }
        self.removed = 0;
    }

    /// The entries in path order, when no change is left to fold in (as
    /// loaded, or after [`PathMap::fold`]): positions in it name entries for
    /// [`PathMap::sorted_value_mut`].
    pub fn sorted(&self) -> Option<Sorted<'_, V>> {
        self.over.is_empty().then(|| self.run())
    }

    /// [`PathMap::sorted`]'s paths, with its values to change in place.
    pub fn sorted_mut(&mut self) -> Option<(Paths<'_>, &mut [V])> {
        self.over.is_empty().then(|| {
            (
                Paths {
                    bytes: &self.bytes,
                    ends: &self.ends,
                },
                self.values.as_mut_slice(),
            )
        })
    }

    /// The value at position `i` of [`PathMap::sorted`], while that holds.
    pub fn sorted_value_mut(&mut self, i: usize) -> Option<&mut V> {
        match self.over.is_empty() {
            true => self.values.get_mut(i),
            false => None,
        }
    }

    /// Every entry, in path order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            run: self.run(),
            at: 0,
            over: self.over.iter().peekable(),
            remaining: self.len(),
        }
    }

    /// Every path, in order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().map(|(p, _)| p)
    }

    /// Every entry's value, in path order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Every entry, mutably, in path order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&[u8], &mut V)> {
        self.fold();
        let bytes = &self.bytes;
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(move |(start, end)| &bytes[start..end])
            .zip(self.values.iter_mut())
    }
}

/// The paths of a map with no change to fold in, by position in path order.
#[derive(Clone, Copy, Default)]
pub struct Paths<'a> {
    bytes: &'a [u8],
    ends: &'a [usize],
}

impl<'a> Paths<'a> {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn path(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Where `path` is from position `from` on: `Ok` at it, `Err` where it
    /// would go (as `binary_search` answers).
    pub fn search_from(&self, from: usize, path: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (from, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.path(mid).cmp(path) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }
}

/// The entries of a map with no change to fold in, by position in path order.
pub struct Sorted<'a, V> {
    paths: Paths<'a>,
    values: &'a [V],
}

impl<V> Default for Sorted<'_, V> {
    fn default() -> Self {
        Sorted {
            paths: Paths::default(),
            values: &[],
        }
    }
}

impl<V> Clone for Sorted<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Sorted<'_, V> {}

impl<'a, V> Sorted<'a, V> {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn path(&self, i: usize) -> &'a [u8] {
        self.paths.path(i)
    }

    pub fn value(&self, i: usize) -> &'a V {
        &self.values[i]
    }

    /// [`Paths::search_from`].
    pub fn search_from(&self, from: usize, path: &[u8]) -> Result<usize, usize> {
        self.paths.search_from(from, path)
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

/// The entries in path order: the run's and the changes' merged.
pub struct Iter<'a, V> {
    run: Sorted<'a, V>,
    /// The run's next position.
    at: usize,
    over: std::iter::Peekable<std::collections::btree_map::Iter<'a, Vec<u8>, Option<V>>>,
    /// Exact, so that an encoder can write the count first.
    remaining: usize,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let run_next = (self.at < self.run.len()).then(|| self.run.path(self.at));
            let from_run = match (run_next, self.over.peek()) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(b), Some((o, _))) => b < o.as_slice(),
            };
            if from_run {
                let i = self.at;
                self.at += 1;
                self.remaining -= 1;
                return Some((self.run.path(i), self.run.value(i)));
            }
            let (p, change) = self.over.next()?;
            match change {
                Some(v) => {
                    self.remaining -= 1;
                    return Some((p.as_slice(), v));
                }
                // A removal: skip the path of the run it shadows.
                None => {
                    if run_next == Some(p.as_slice()) {
                        self.at += 1;
                    }
                }
            }
        }
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

impl<'a, V> IntoIterator for &'a PathMap<V> {
    type Item = (&'a [u8], &'a V);
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
            let mut map = PathMap::from_sorted(start).unwrap();
            for op in ops {
                match op {
                    Op::Insert(p, v) => prop_assert_eq!(map.insert(p.clone(), v), model.insert(p, v)),
                    Op::Remove(p) => prop_assert_eq!(map.remove(&p), model.remove(&p)),
                    Op::Fold => map.fold(),
                }
                prop_assert_eq!(map.len(), model.len());
                let got: Vec<(&[u8], &u32)> = map.iter().collect();
                let want: Vec<(&[u8], &u32)> = model.iter().map(|(p, v)| (p.as_slice(), v)).collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(map.iter().size_hint(), (model.len(), Some(model.len())));
                for p in model.keys() {
                    prop_assert_eq!(map.get(p), model.get(p));
                }
            }
            for (_, v) in map.iter_mut() {
                *v = v.wrapping_add(1);
            }
            let got: Vec<(Vec<u8>, u32)> = map.iter().map(|(p, v)| (p.to_vec(), *v)).collect();
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
        assert!(map.over.is_empty(), "inserts in path order go to the run");
        assert_eq!(map.len(), 10_000);
        assert!(PathMap::from_sorted(vec![(b"b".to_vec(), 1), (b"a".to_vec(), 2)]).is_none());
        assert!(PathMap::from_sorted(vec![(b"a".to_vec(), 1), (b"a".to_vec(), 2)]).is_none());
    }
}
