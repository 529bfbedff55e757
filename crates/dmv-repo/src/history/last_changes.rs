//! Which commit last changed each entry of a folder, as a folder listing
//! beside its names shows (GitHub's "last commit" column): history is
//! walked newest first, and only the commits that changed the folder are
//! read further. The walk is bounded; entries it does not settle are left out.

use crate::repository::handles::History;
use std::collections::{BTreeMap, HashMap};

use dmv_store::object::EntryKind;
use dmv_store::ObjectId;

use crate::error::RepoResult;
use crate::history::tree::{lookup, read_dir_page};

/// What a folder's entries were at one commit, by name.
type Entries = BTreeMap<Vec<u8>, ObjectId>;

impl History<'_> {
    /// For each of `names` in folder `folder` (empty: the root) as of
    /// `start`, the newest commit that changed it, looking at most
    /// `max_commits` commits back. Names not settled by then are missing.
    pub fn last_changes(
        &self,
        start: &ObjectId,
        folder: &[u8],
        names: &[Vec<u8>],
        max_commits: usize,
    ) -> RepoResult<HashMap<Vec<u8>, ObjectId>> {
        let mut found = HashMap::new();
        let mut folders: HashMap<ObjectId, Entries> = HashMap::new();
        for info in self.walk(&[*start])?.take(max_commits) {
            if found.len() == names.len() {
                break;
            }
            let info = info?;
            let mine = self.folder_at(&info.commit.tree, folder)?;
            let before = match info.commit.parents.first() {
                Some(p) => self.folder_at(&self.commit(p)?.tree, folder)?,
                None => None,
            };
            if mine == before {
                continue;
            }
            // A commit's folder is mostly the next one's parent's: the last few read are kept.
            if folders.len() > 4 {
                folders.retain(|t, _| Some(*t) == mine || Some(*t) == before);
            }
            for tree in [mine, before].into_iter().flatten() {
                if let std::collections::hash_map::Entry::Vacant(slot) = folders.entry(tree) {
                    let (entries, _) = read_dir_page(&self.store, &tree, None, usize::MAX)?;
                    slot.insert(entries.into_iter().map(|e| (e.name, e.id)).collect());
                }
            }
            let empty = Entries::new();
            let (now, then) = (
                mine.map_or(&empty, |t| &folders[&t]),
                before.map_or(&empty, |t| &folders[&t]),
            );
            for name in names {
                if !found.contains_key(name) && now.get(name) != then.get(name) {
                    found.insert(name.clone(), info.id);
                }
            }
        }
        Ok(found)
    }

    /// The tree of `folder` under `root`, if it is a folder there.
    fn folder_at(&self, root: &ObjectId, folder: &[u8]) -> RepoResult<Option<ObjectId>> {
        if folder.is_empty() {
            return Ok(Some(*root));
        }
        Ok(lookup(&self.store, root, folder)?
            .filter(|e| e.kind == EntryKind::Dir)
            .map(|e| e.id))
    }
}
