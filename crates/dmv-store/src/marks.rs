//! Flags on the objects of a store, kept by their place in its indexes: a
//! value per object (a byte or two: 2-4 MB at two million objects) where a
//! set of their ids cost ~100 B an object, and gc of two million objects
//! peaked at 592 MiB. An object's flags live where the first index that
//! holds it holds it, so a second copy in another pack shares them.

use std::sync::Arc;

use crate::index::{Located, PackIndex};
use crate::{ObjectId, StoreResult};

/// An object's place: which index, and where in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub index: usize,
    pub position: usize,
}

/// A `T` per object of the indexes the marks were made over (as they were
/// then: objects stored since have no place here).
pub(crate) struct Marks<T> {
    indexes: Vec<Arc<PackIndex>>,
    values: Vec<Vec<T>>,
}

impl<T: Copy + Default + PartialEq> Marks<T> {
    pub(crate) fn new(indexes: Vec<Arc<PackIndex>>) -> Marks<T> {
        let values = indexes
            .iter()
            .map(|idx| vec![T::default(); idx.len()])
            .collect();
        Marks { indexes, values }
    }

    /// Where `id`'s flags live, if any index holds it (searched whole,
    /// past any filter: a damaged filter must not make an object look absent).
    pub(crate) fn slot(&self, id: &ObjectId) -> Option<Slot> {
        self.indexes
            .iter()
            .enumerate()
            .find_map(|(index, idx)| idx.position(id).map(|position| Slot { index, position }))
    }

    pub(crate) fn get(&self, slot: Slot) -> T {
        self.values[slot.index][slot.position]
    }

    pub(crate) fn set(&mut self, slot: Slot, value: T) {
        self.values[slot.index][slot.position] = value;
    }

    /// The value of the object at `slot`, found at its first holder when that is another place.
    pub(crate) fn of(&self, slot: Slot, id: &ObjectId) -> T {
        match self.get(slot) {
            // Only an object's first place is ever set.
            value if value != T::default() => value,
            _ => self
                .slot(id)
                .filter(|first| *first != slot)
                .map_or(T::default(), |first| self.get(first)),
        }
    }

    pub(crate) fn located(&self, slot: Slot) -> StoreResult<Located> {
        self.indexes[slot.index].located_at(slot.position)
    }

    /// Every place, index by index.
    pub(crate) fn slots(&self) -> impl Iterator<Item = Slot> + use<T> {
        let lens: Vec<usize> = self.indexes.iter().map(|idx| idx.len()).collect();
        lens.into_iter()
            .enumerate()
            .flat_map(|(index, len)| (0..len).map(move |position| Slot { index, position }))
    }

    /// The packs the indexes name, each once, in index order.
    pub(crate) fn packs(&self) -> Vec<ObjectId> {
        let mut seen = std::collections::HashSet::new();
        self.indexes
            .iter()
            .flat_map(|idx| idx.packs().iter().copied())
            .filter(|p| seen.insert(*p))
            .collect()
    }
}
