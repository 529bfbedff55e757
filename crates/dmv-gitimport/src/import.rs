//! Converting a Git repository's history: each new commit, parents first,
//! with its tree converted folder by folder (a folder Git shares between
//! commits is converted once), its blobs stored as DMV content (an LFS
//! pointer as the file it points to when Git LFS has it locally), and its
//! author, committer, dates and message as they were. Then the branches
//! and tags are set, except those someone moved since the last import.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use dmv_repo::store::object::{Commit, EntryKind, Signature, Tag, TreeEntry};
use dmv_repo::store::{ObjectId, ObjectKind, WriteSession};
use dmv_repo::{Head, Progress, RefUpdate, Repository, Silent};

use crate::lfs::LfsPointer;
use crate::map::ImportMap;
use dmv_repo::ref_names::{BRANCHES, TAGS};

/// Git folders nest at most this deep here (DMV's own limit on paths).
const MAX_DEPTH: usize = 1024;
/// Commits converted between two saves of the work done, so an interrupted
/// import resumes from the last save.
const COMMITS_PER_SAVE: usize = 1000;

/// Why an import stopped. Converted commits are recorded a thousand at a
/// time, so running the import again resumes from the last thousand done.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The path is not a Git repository that can be opened.
    #[error("cannot open the Git repository {path}: {detail}")]
    Open {
        /// The path as given.
        path: String,
        /// Why gix could not open it.
        detail: String,
    },
    /// Reading the Git repository failed (a missing or corrupt object or
    /// ref), or a tree nests folders deeper than DMV allows.
    #[error("reading the Git repository: {0}")]
    Git(String),
    /// The DMV repository failed: its refs, HEAD, working tree or files.
    #[error(transparent)]
    Repo(#[from] dmv_repo::RepoError),
    /// DMV's object store failed (reading, or writing the converted objects).
    #[error(transparent)]
    Store(#[from] dmv_repo::store::StoreError),
    /// The record of earlier imports (`.dmv/git-import`) cannot be read or
    /// is corrupt; the message names the file and the line.
    #[error("{0}")]
    Map(String),
}

fn git_err(e: impl std::fmt::Display) -> ImportError {
    ImportError::Git(e.to_string())
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Commits converted by this import.
    pub commits: u64,
    /// Commits an earlier import converted (and still in the store): not converted again.
    pub already: u64,
    /// Branches that name their Git commit now, moved or already there (short names: `main`).
    pub branches: Vec<String>,
    /// Tags that name their Git commit now, moved or already there (short names: `v1.0`).
    pub tags: Vec<String>,
    /// Refs (full names) left as they are, each with why: moved since the
    /// last import, or checked out here with changes in the way.
    pub left_alone: Vec<(String, String)>,
    /// Git LFS files stored as their content (found in `.git/lfs/objects`).
    pub lfs_content: u64,
    /// Git LFS files stored as their pointer text: their content is not in
    /// `.git/lfs/objects` (`git lfs fetch --all` brings it), or not at the size the pointer says.
    pub lfs_pointers: u64,
    /// Submodules (a commit of another repository), not imported.
    pub submodules: u64,
    /// The branch checked out afterwards (into an empty repository).
    pub checked_out: Option<String>,
}

/// Imports the Git repository at `git_path` (its working tree, its `.git`
/// or a bare one) into `repo`. `progress(done, total)` counts commits.
pub fn import_git(
    repo: &Repository,
    git_path: &Path,
    progress: &dyn Progress,
) -> Result<Imported, ImportError> {
    let git = gix::open(git_path).map_err(|e| ImportError::Open {
        path: git_path.display().to_string(),
        detail: e.to_string(),
    })?;
    // From the first object written until the refs keep them: a gc meanwhile
    // must not take converted commits that no ref reaches yet.
    let _gc = repo.store.hold_off_gc()?;
    let map_path = repo.dmv.join("git-import");
    let mut map = ImportMap::load(&map_path).map_err(ImportError::Map)?;
    // A commit an earlier import made and something since removed (a gc
    // after its branch was deleted) is converted again.
    let mut gone = Vec::new();
    for (git_id, dmv) in &map.commits {
        if !repo.store.contains(dmv)? {
            gone.push(git_id.clone());
        }
    }
    for git_id in gone {
        map.commits.remove(&git_id);
    }
    let was_empty = repo.head_commit()?.is_none();

    let refs = git_refs(&git)?;
    let order = new_commits(&git, &refs, &map)?;
    let mut done = Imported {
        already: map.commits.len() as u64,
        ..Imported::default()
    };
    let mut converter = Converter {
        git: &git,
        repo,
        git_dir: git.git_dir().to_path_buf(),
        trees: HashMap::new(),
        blobs: HashMap::new(),
        earlier: map.commits.keys().cloned().collect(),
        seeded: HashSet::new(),
        done: &mut done,
    };
    for batch in order.chunks(COMMITS_PER_SAVE) {
        let mut session = repo.store.begin_write()?;
        for id in batch {
            let converted = converter.commit(&mut session, id, &map)?;
            map.commits.insert(id.to_string(), converted);
            converter.done.commits += 1;
            progress.update(converter.done.commits, order.len() as u64);
        }
        session.finish()?;
        drop(session);
        save(&map_path, &map)?;
    }

    // Into an empty repository: Git's HEAD branch is checked out, as a clone
    // would, before any ref moves (the working tree and the dirstate are empty
    // until then, so nothing counts as changed).
    let checkout = match was_empty && !repo.config.bare {
        true => git
            .head_name()
            .map_err(git_err)?
            .map(|n| n.as_bstr().to_string())
            .and_then(|n| {
                refs.iter()
                    .find(|(r, _, _)| *r == n)
                    .map(|(r, id, _)| (r.clone(), map.commits[&id.to_string()]))
            }),
        false => None,
    };
    if let Some((_, commit)) = &checkout {
        repo.checkout_tree(&repo.commit(commit)?.tree, &Silent)?;
    }
    let checked_out = match repo.head()? {
        Head::Branch(b) if !repo.config.bare && checkout.is_none() => Some(b),
        _ => None,
    };
    let mut updates = Vec::new();
    // Git's annotated tags become DMV's (the same tag gives the same id
    // again, so a second import moves nothing).
    let mut session = repo.store.begin_write()?;
    let mut news = Vec::with_capacity(refs.len());
    for (name, id, annotation) in &refs {
        let commit = map.commits[&id.to_string()];
        news.push(match annotation {
            None => commit,
            Some(a) => {
                let tag = Tag {
                    target: commit,
                    name: name.trim_start_matches(TAGS).to_string(),
                    tagger: a.tagger.clone(),
                    message: a.message.clone(),
                };
                session.put_object(ObjectKind::Tag, &dmv_repo::store::object::encode(&tag))?
            }
        });
    }
    session.finish()?;
    drop(session);
    for ((name, _, _), new) in refs.iter().zip(news) {
        let current = repo.refs.get(name)?;
        let ours = current.is_none()
            || current == Some(new)
            || current == map.refs.get(name).copied()
            || (name.starts_with(BRANCHES)
                && current.is_some_and(|c| repo.history().is_ancestor(&c, &new).unwrap_or(false)));
        if !ours {
            done.left_alone
                .push((name.clone(), "it moved here since the last import".into()));
            continue;
        }
        // The branch checked out here moves with its files, as a pull's fast-forward does.
        if checked_out.as_deref() == Some(name.as_str())
            && current.is_some()
            && current != Some(new)
        {
            match repo.checkout_tree(&repo.commit(&new)?.tree, &Silent) {
                Ok(()) => {}
                Err(
                    e @ (dmv_repo::RepoError::UncommittedChanges { .. }
                    | dmv_repo::RepoError::UntrackedInTheWay { .. }),
                ) => {
                    done.left_alone
                        .push((name.clone(), format!("it is checked out here and {e}")));
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        if current != Some(new) {
            updates.push(RefUpdate {
                name: name.clone(),
                expected: Some(current),
                new: Some(new),
            });
        }
        map.refs.insert(name.clone(), new);
        match name.strip_prefix(BRANCHES) {
            Some(b) => done.branches.push(b.to_string()),
            None => done.tags.push(name.trim_start_matches(TAGS).to_string()),
        }
    }
    if !updates.is_empty() {
        repo.update_refs(
            &updates,
            &repo.who(),
            &format!("import git {}", git_path.display()),
        )?;
    }
    save(&map_path, &map)?;
    if let Some((branch, _)) = checkout {
        repo.set_head(&Head::Branch(branch.clone()))?;
        done.checked_out = Some(branch.trim_start_matches(BRANCHES).to_string());
    }
    Ok(done)
}

fn save(path: &Path, map: &ImportMap) -> Result<(), ImportError> {
    dmv_repo::write_atomic(path, map.encode().as_bytes())?;
    Ok(())
}

/// What an annotated Git tag says beside its commit.
struct Annotation {
    tagger: Signature,
    message: String,
}

/// Branches and tags, each with the commit it names (tags peeled; tags of
/// trees or blobs have no commit and are skipped) and, for an annotated
/// tag, its tagger and message (a tag without a tagger takes its commit's
/// committer, as old Git wrote some).
fn git_refs(
    git: &gix::Repository,
) -> Result<Vec<(String, gix::ObjectId, Option<Annotation>)>, ImportError> {
    let mut out = Vec::new();
    let platform = git.references().map_err(git_err)?;
    for r in platform.all().map_err(git_err)? {
        let mut r = r.map_err(git_err)?;
        let name = r.name().as_bstr().to_string();
        if !(name.starts_with(BRANCHES) || name.starts_with(TAGS))
            || dmv_repo::validate_ref_name(&name).is_err()
        {
            continue;
        }
        let direct = r.target().try_id().map(|id| id.to_owned());
        let id = r.peel_to_id().map_err(git_err)?.detach();
        if git.find_object(id).map_err(git_err)?.kind != gix::object::Kind::Commit {
            continue;
        }
        let mut annotation = None;
        if let Some(direct) = direct.filter(|d| *d != id && name.starts_with(TAGS)) {
            let object = git.find_object(direct).map_err(git_err)?;
            if object.kind == gix::object::Kind::Tag {
                let tag = object.into_tag();
                let decoded = tag.decode().map_err(git_err)?;
                let tagger = match decoded.tagger().map_err(git_err)? {
                    Some(t) => signature(t)?,
                    None => signature(
                        git.find_commit(id)
                            .map_err(git_err)?
                            .decode()
                            .map_err(git_err)?
                            .committer()
                            .map_err(git_err)?,
                    )?,
                };
                annotation = Some(Annotation {
                    tagger,
                    message: decoded.message.to_string(),
                });
            }
        }
        out.push((name, id, annotation));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The commits the refs reach that no import converted yet, parents first.
fn new_commits(
    git: &gix::Repository,
    refs: &[(String, gix::ObjectId, Option<Annotation>)],
    map: &ImportMap,
) -> Result<Vec<gix::ObjectId>, ImportError> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(gix::ObjectId, bool)> =
        refs.iter().map(|(_, id, _)| (*id, false)).collect();
    while let Some((id, parents_done)) = stack.pop() {
        if parents_done {
            order.push(id);
            continue;
        }
        if map.commits.contains_key(&id.to_string()) || !seen.insert(id) {
            continue;
        }
        stack.push((id, true));
        let commit = git.find_commit(id).map_err(git_err)?;
        for p in commit.parent_ids() {
            let p = p.detach();
            if !seen.contains(&p) && !map.commits.contains_key(&p.to_string()) {
                stack.push((p, false));
            }
        }
    }
    Ok(order)
}

struct Converter<'g, 'd> {
    git: &'g gix::Repository,
    repo: &'g Repository,
    git_dir: PathBuf,
    /// Git folder → DMV tree and the size of its files.
    trees: HashMap<gix::ObjectId, (ObjectId, u64)>,
    /// Git blob → DMV content and size.
    blobs: HashMap<gix::ObjectId, (ObjectId, u64)>,
    /// Commits converted by earlier imports, and those whose trees were
    /// learned into the maps above.
    earlier: HashSet<String>,
    seeded: HashSet<gix::ObjectId>,
    done: &'d mut Imported,
}

fn signature(s: gix::actor::SignatureRef<'_>) -> Result<Signature, ImportError> {
    let time = s.time().map_err(git_err)?;
    Ok(Signature {
        name: s.name.to_string(),
        email: s.email.to_string(),
        time: time.seconds,
        tz_minutes: (time.offset / 60) as i16,
    })
}

impl Converter<'_, '_> {
    fn commit(
        &mut self,
        session: &mut WriteSession<'_>,
        id: &gix::ObjectId,
        map: &ImportMap,
    ) -> Result<ObjectId, ImportError> {
        let commit = self.git.find_commit(*id).map_err(git_err)?;
        let decoded = commit.decode().map_err(git_err)?;
        for p in decoded.parents() {
            // Only commits of earlier imports: this one's are in the maps already (and in no pack yet).
            if let Some(dmv) = map
                .commits
                .get(&p.to_string())
                .filter(|_| self.seeded.insert(p) && self.earlier.contains(&p.to_string()))
            {
                let git_tree = self
                    .git
                    .find_commit(p)
                    .map_err(git_err)?
                    .tree_id()
                    .map_err(git_err)?
                    .detach();
                self.seed(git_tree, self.repo.commit(dmv)?.tree)?;
            }
        }
        let (tree, _) = self.tree(session, decoded.tree(), 0)?;
        let parents = decoded
            .parents()
            .map(|p| {
                map.commits.get(&p.to_string()).copied().ok_or_else(|| {
                    ImportError::Git(format!("parent {p} of {id} was not converted first"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let message = decoded.message.to_string();
        let converted = Commit {
            tree,
            parents,
            author: signature(decoded.author().map_err(git_err)?)?,
            committer: signature(decoded.committer().map_err(git_err)?)?,
            message: message.strip_suffix('\n').unwrap_or(&message).to_string(),
        };
        Ok(session.put_object(
            ObjectKind::Commit,
            &dmv_repo::store::object::encode(&converted),
        )?)
    }

    /// Learns what an earlier import made of a Git tree (`git`, converted to
    /// `dmv`), folder by folder, so the commits that follow it reuse it
    /// instead of converting its files again: walks both trees' folders
    /// side by side, reading no file.
    fn seed(&mut self, git: gix::ObjectId, dmv: ObjectId) -> Result<(), ImportError> {
        let mut stack = vec![(git, dmv)];
        while let Some((g, d)) = stack.pop() {
            if self.trees.contains_key(&g) {
                continue;
            }
            let converted = dmv_repo::tree::read_dir(&self.repo.store, &d)?;
            self.trees
                .insert(g, (d, converted.iter().map(|e| e.size).sum()));
            let tree = self.git.find_tree(g).map_err(git_err)?;
            for e in &tree.decode().map_err(git_err)?.entries {
                let name: &[u8] = e.filename.as_ref();
                let Ok(at) = converted.binary_search_by(|c| c.name.as_slice().cmp(name)) else {
                    continue;
                };
                let c = &converted[at];
                use gix::object::tree::EntryKind as Git;
                match (e.mode.kind(), c.kind) {
                    (Git::Tree, EntryKind::Dir) => stack.push((e.oid.to_owned(), c.id)),
                    (Git::Blob, EntryKind::File) | (Git::BlobExecutable, EntryKind::Executable) => {
                        self.blobs.insert(e.oid.to_owned(), (c.id, c.size));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn tree(
        &mut self,
        session: &mut WriteSession<'_>,
        id: gix::ObjectId,
        depth: usize,
    ) -> Result<(ObjectId, u64), ImportError> {
        if let Some(t) = self.trees.get(&id) {
            return Ok(*t);
        }
        if depth > MAX_DEPTH {
            return Err(ImportError::Git(format!(
                "tree {id} nests folders more than {MAX_DEPTH} deep"
            )));
        }
        let tree = self.git.find_tree(id).map_err(git_err)?;
        let decoded = tree.decode().map_err(git_err)?;
        let mut entries = Vec::with_capacity(decoded.entries.len());
        for e in &decoded.entries {
            let oid = e.oid.to_owned();
            let name = e.filename.to_vec();
            use gix::object::tree::EntryKind as Git;
            let (kind, (content, size)) = match e.mode.kind() {
                Git::Tree => (EntryKind::Dir, self.tree(session, oid, depth + 1)?),
                Git::Blob => (EntryKind::File, self.blob(session, oid)?),
                Git::BlobExecutable => (EntryKind::Executable, self.blob(session, oid)?),
                Git::Link => {
                    let target = self.git.find_blob(oid).map_err(git_err)?.data.clone();
                    (
                        EntryKind::Symlink,
                        (
                            session.put_object(ObjectKind::Chunk, &target)?,
                            target.len() as u64,
                        ),
                    )
                }
                Git::Commit => {
                    self.done.submodules += 1;
                    continue;
                }
            };
            entries.push(TreeEntry {
                name,
                kind,
                id: content,
                size,
            });
        }
        let converted = dmv_repo::tree::write_dir(session, entries)?;
        self.trees.insert(id, converted);
        Ok(converted)
    }

    fn blob(
        &mut self,
        session: &mut WriteSession<'_>,
        id: gix::ObjectId,
    ) -> Result<(ObjectId, u64), ImportError> {
        if let Some(b) = self.blobs.get(&id) {
            return Ok(*b);
        }
        let blob = self.git.find_blob(id).map_err(git_err)?;
        let pointer = LfsPointer::parse(&blob.data);
        let local = pointer
            .as_ref()
            .map(|p| p.object_path(&self.git_dir))
            .and_then(|path| std::fs::File::open(path).ok());
        let stored = match (pointer, local) {
            (Some(p), Some(mut file)) if file.metadata().is_ok_and(|m| m.len() == p.size) => {
                self.done.lfs_content += 1;
                session.put_content(&mut file)?
            }
            (Some(_), _) => {
                self.done.lfs_pointers += 1;
                session.put_content(&mut blob.data.as_slice())?
            }
            (None, _) => session.put_content(&mut blob.data.as_slice())?,
        };
        self.blobs.insert(id, stored);
        Ok(stored)
    }
}
