//! The data a working-tree mount read of files whose data is absent, kept
//! here and bounded by `mount.cacheSize`: the versions read, least
//! recently first, each counted at its full size, in `.dmv/mount-reads`
//! (one `HEX SIZE` line per read, appended, compacted once it holds twice
//! what it lists) so the budget spans mounts. Past the budget, the least
//! recently read go down to 80% of it, through `dmv drop`'s rules: what
//! is here of a version only in part goes at once (this replica holds no
//! copy of it), a whole version only once `numcopies` other replicas
//! confirm theirs; never a version open now, nor one the working tree no
//! longer shows absent (brought in, changed).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

/// Versions the list remembers, at most (the least recently read are forgotten first).
const MOST_REMEMBERED: usize = 100_000;
/// Past the budget, reads are dropped down to this share of it.
const DOWN_TO_PERCENT: u64 = 80;

pub struct ReadCache {
    file: PathBuf,
    /// Each version's last read (a count) and size. A list scanned on
    /// every read made a copy of 10,000 photos out of a mount quadratic.
    reads: HashMap<ObjectId, (u64, u64)>,
    /// The versions by their last read, least recent first.
    order: BTreeMap<u64, ObjectId>,
    next_read: u64,
    /// The sizes of the versions listed, summed.
    held: u64,
    lines: usize,
    budget: Option<u64>,
    /// The list, open to append: opened once, not again for every read
    /// (a copy of a folder of photos out of the mount opened and closed
    /// it twice a photo); let go when the list is rewritten.
    appending: Option<std::fs::File>,
}

impl ReadCache {
    /// The reads `repo` remembers, with its budget.
    pub fn load(repo: &Repository) -> ReadCache {
        ReadCache::from_file(repo.dmv.join("mount-reads"), repo.config.mount_cache_size)
    }

    fn from_file(file: PathBuf, budget: Option<u64>) -> ReadCache {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut cache = ReadCache {
            file,
            reads: HashMap::new(),
            order: BTreeMap::new(),
            next_read: 0,
            held: 0,
            lines: 0,
            budget,
            appending: None,
        };
        // A torn or damaged line is passed over: the list is a hint, not a record.
        for line in text.lines() {
            cache.lines += 1;
            let mut words = line.split(' ');
            let (Some(id), Some(size), None) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            if let (Some(id), Ok(size)) = (ObjectId::from_hex(id), size.parse()) {
                cache.note(id, size);
            }
        }
        cache
    }

    fn note(&mut self, id: ObjectId, size: u64) {
        self.remove(&id);
        self.reads.insert(id, (self.next_read, size));
        self.order.insert(self.next_read, id);
        self.next_read += 1;
        self.held += size;
        if self.order.len() > MOST_REMEMBERED {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.remove(&oldest);
            }
        }
    }

    fn remove(&mut self, id: &ObjectId) {
        if let Some((read, size)) = self.reads.remove(id) {
            self.order.remove(&read);
            self.held -= size;
        }
    }

    /// The versions listed, least recently read first, with their sizes.
    fn in_order(&self) -> impl Iterator<Item = (&ObjectId, u64)> {
        self.order.values().map(|id| (id, self.reads[id].1))
    }

    /// `mount.cacheSize`, if set.
    pub fn budget(&self) -> Option<u64> {
        self.budget
    }

    /// `id` (`size` bytes) was read now.
    pub fn read(&mut self, id: ObjectId, size: u64) {
        self.note(id, size);
        if self.lines >= 2 * self.order.len().max(1024) {
            self.rewrite();
            return;
        }
        if self.appending.is_none() {
            self.appending = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.file)
                .ok();
        }
        let line = format!("{} {size}\n", id.to_hex());
        match self
            .appending
            .as_mut()
            .map(|f| f.write_all(line.as_bytes()))
        {
            Some(Ok(())) => self.lines += 1,
            _ => self.appending = None,
        }
    }

    /// These versions are no longer here (dropped) or no longer absent.
    pub fn forget(&mut self, ids: &[ObjectId]) {
        for id in ids {
            self.remove(id);
        }
        self.rewrite();
    }

    fn rewrite(&mut self) {
        let text: String = self
            .in_order()
            .map(|(id, size)| format!("{} {size}\n", id.to_hex()))
            .collect();
        let tmp = self.file.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &self.file).is_ok() {
            self.appending = None;
            self.lines = self.order.len();
        }
    }

    /// Bytes the reads listed hold, each version at its full size.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// The least recently read versions to drop to come back within the
    /// budget, passing over those `keep` says stay (open now).
    pub fn past_budget(&self, keep: impl Fn(&ObjectId) -> bool) -> Vec<ObjectId> {
        let Some(budget) = self.budget else {
            return Vec::new();
        };
        let mut held = self.held();
        if held <= budget {
            return Vec::new();
        }
        let target = budget / 100 * DOWN_TO_PERCENT;
        let mut going = Vec::new();
        for (id, size) in self.in_order() {
            if held <= target {
                break;
            }
            if !keep(id) {
                going.push(*id);
                held -= size;
            }
        }
        going
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_hex(&format!("{n:02x}").repeat(32)).unwrap()
    }

    #[test]
    fn the_least_recently_read_go_first_down_to_a_share_of_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = ReadCache::from_file(dir.path().join("mount-reads"), Some(1000));
        for n in 1..=4 {
            cache.read(id(n), 300);
        }
        cache.read(id(1), 300);
        // 1,200 held: 2 and 3 go (down to 800 at most), 4 stays while open.
        assert_eq!(cache.past_budget(|_| false), [id(2), id(3)]);
        assert_eq!(cache.past_budget(|i| *i == id(2)), [id(3), id(4)]);
        cache.forget(&[id(2), id(3)]);
        assert!(cache.past_budget(|_| false).is_empty());
        // A read after the list was rewritten goes into the new list (the
        // list's file kept open would otherwise be the one replaced).
        cache.read(id(5), 100);
        // What was written reads back the same, damage passed over.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&cache.file)
            .unwrap()
            .write_all(b"torn lin")
            .unwrap();
        let text = std::fs::read_to_string(&cache.file).unwrap();
        assert!(
            text.starts_with(&format!("{} 300\n", id(4).to_hex())),
            "{text}"
        );
        let back = ReadCache::from_file(cache.file.clone(), None);
        assert!(back.in_order().eq(cache.in_order()));
        assert_eq!(back.held(), 700);
        assert!(
            back.past_budget(|_| false).is_empty(),
            "no budget, nothing goes"
        );
    }
}
