//! Commits made on the server from files uploaded to it (the web UI's
//! uploads from a phone or a browser): the files go into one folder of a
//! branch as one new commit, under a push's rules (the caller may write,
//! nobody else's lock is changed, the branch moves by compare-and-swap and
//! never onto a checked-out branch) and one more that a person picking
//! files in a browser needs: a path that changed on the branch since the
//! version they were shown is refused, never silently replaced.

use std::fs::File;
use std::path::PathBuf;

use dmv_repo::ref_names::BRANCHES;
use dmv_repo::store::object::{EntryKind, Signature, TreeEntry};
use dmv_repo::store::ObjectId;
use dmv_repo::tree::{lookup, put_in_folder, valid_entry_name, MAX_PATH_BYTES};
use dmv_repo::{RepoError, Repository};

use crate::protocol::{Response, WireRefUpdate};
use crate::serving::audit::{audit_ref, record_in_dir};
use crate::serving::serve::{caller_label, update_refs};
use crate::{Caller, Refusal, SyncError, SyncResult};

/// A file that arrived whole, waiting on disk to be committed.
pub struct UploadedFile {
    /// Its name in the folder (no `/`).
    pub name: String,
    /// Where its bytes are.
    pub staged: PathBuf,
}

/// What to commit where.
pub struct UploadCommit<'a> {
    /// The branch's short name (`main`); made when it does not exist.
    pub branch: &'a str,
    /// The commit the uploader was shown (None: the branch had none):
    /// paths changed on the branch since are refused.
    pub seen: Option<ObjectId>,
    /// The folder, '/'-separated from the root ("" is the root).
    pub folder: &'a str,
    /// The files, each replacing a file of the same name.
    pub files: &'a [UploadedFile],
    /// The commit message.
    pub message: &'a str,
    /// Author and committer.
    pub author: Signature,
}

/// What an upload made.
#[derive(Debug, PartialEq, Eq)]
pub struct Uploaded {
    /// The new commit (the branch's head when nothing changed).
    pub commit: ObjectId,
    /// Whether the files were already on the branch as they are.
    pub unchanged: bool,
}

/// Branch moves lost to other writers before the upload gives up.
pub(crate) const TRIES: usize = 8;

/// Stores the files' content, then commits them on the branch's head of
/// the moment and moves the branch there as a push would; when another
/// writer moved it first, commits again on the new head (their changes
/// kept), as long as the uploaded paths are as the uploader saw them.
pub fn commit_uploaded(
    repo: &Repository,
    caller: &Caller,
    up: &UploadCommit<'_>,
) -> SyncResult<Uploaded> {
    let (branch, folder) = checked(caller, up)?;
    // From the first object written until the branch holds the commit.
    let _gc = repo.store.hold_off_gc()?;
    let entries = store_files(repo, up)?;
    let seen_tree = up
        .seen
        .map(|c| repo.commit(&c).map(|c| c.tree))
        .transpose()?;
    for _ in 0..TRIES {
        let head = repo.refs.get(&branch)?;
        let Some(id) = commit_on(repo, head, seen_tree, up, &folder, &entries)? else {
            return Ok(unchanged(head));
        };
        let who = caller.user.as_deref().unwrap_or("a web upload");
        let update = WireRefUpdate {
            name: branch.clone(),
            old: head,
            new: Some(id),
        };
        match update_refs(repo, caller, vec![update], who, "upload")? {
            Response::RefsUpdated => {
                record_in_dir(
                    repo,
                    &caller.events,
                    upload_event(caller, up, &folder, &branch, head, id),
                );
                let ids: Vec<ObjectId> = entries.iter().map(|e| e.id).collect();
                repo.copies()
                    .record_locations(&ids, repo.copies().replica_id()?, true)?;
                return Ok(Uploaded {
                    commit: id,
                    unchanged: false,
                });
            }
            // Another writer moved the branch: commit again on theirs.
            _ => continue,
        }
    }
    Err(kept_moving(up))
}

/// The audit log's event of an upload that moved `branch` from `old` to `new`.
pub(crate) fn upload_event(
    caller: &Caller,
    up: &UploadCommit<'_>,
    folder: &str,
    branch: &str,
    old: Option<ObjectId>,
    new: ObjectId,
) -> dmv_repo::AuditEvent {
    let mut event = dmv_repo::AuditEvent::new("upload", caller_label(caller));
    event.refs = vec![audit_ref(branch, old, Some(new))];
    event.paths = up
        .files
        .iter()
        .map(|f| match folder.is_empty() {
            true => f.name.clone(),
            false => format!("{folder}/{}", f.name),
        })
        .collect();
    event
}

pub(crate) fn unchanged(head: Option<ObjectId>) -> Uploaded {
    Uploaded {
        // commit_on gives None only on an existing head.
        commit: head.unwrap_or(ObjectId([0; 32])),
        unchanged: true,
    }
}

pub(crate) fn kept_moving(up: &UploadCommit<'_>) -> SyncError {
    SyncError::Refused(Refusal::BranchKeptMoving {
        branch: up.branch.to_string(),
        tries: TRIES,
    })
}

/// The branch's ref and the folder (no `/` at either end), once the
/// caller may write and every name is one a tree and a checkout hold.
pub(crate) fn checked(caller: &Caller, up: &UploadCommit<'_>) -> SyncResult<(String, String)> {
    if !caller.may_write {
        return Err(SyncError::Refused(Refusal::NeedsWriteAccess {
            verb: "upload",
        }));
    }
    let bad = |path: &str, reason| {
        SyncError::Repo(RepoError::BadPath {
            path: path.to_string(),
            reason,
        })
    };
    if up
        .folder
        .split('/')
        .any(|p| !p.is_empty() && !valid_entry_name(p.as_bytes()))
    {
        return Err(bad(up.folder, "not a folder's path"));
    }
    if up.files.is_empty() {
        return Err(bad(up.folder, "no files were uploaded"));
    }
    for (i, f) in up.files.iter().enumerate() {
        if !valid_entry_name(f.name.as_bytes()) {
            return Err(bad(&f.name, "not a file name"));
        }
        if up.files[..i].iter().any(|g| g.name == f.name) {
            return Err(bad(&f.name, "uploaded twice at once"));
        }
    }
    // Git refuses a branch of that name: every revision `HEAD` would mean two things.
    if up.branch == "HEAD" {
        return Err(bad(up.branch, "not a branch's name"));
    }
    let branch = format!("{BRANCHES}{}", up.branch);
    dmv_repo::validate_ref_name(&branch)?;
    let folder = up.folder.trim_matches('/').to_string();
    // A path no file system holds would stop every clone's checkout.
    if let Some(f) = up
        .files
        .iter()
        .find(|f| path_in(&folder, &f.name).len() > MAX_PATH_BYTES)
    {
        return Err(bad(
            &f.name,
            "in a folder whose path with it is longer than a path may be (4,096 bytes)",
        ));
    }
    // Said before anything is stored; the branch's move checks it again.
    if let Some(f) = up
        .files
        .iter()
        .find(|f| !caller.write.covers(path_in(&folder, &f.name).as_bytes()))
    {
        return Err(SyncError::Refused(Refusal::OutsideWriteGrant {
            path: path_in(&folder, &f.name),
            how: "uploading it".into(),
        }));
    }
    Ok((branch, folder))
}

fn path_in(folder: &str, name: &str) -> String {
    if folder.is_empty() {
        name.to_string()
    } else {
        format!("{folder}/{name}")
    }
}

/// Stores the files' content; their entries in the folder.
pub(crate) fn store_files(repo: &Repository, up: &UploadCommit<'_>) -> SyncResult<Vec<TreeEntry>> {
    let mut session = repo.store.begin_write()?;
    let mut entries = Vec::with_capacity(up.files.len());
    for f in up.files {
        let mut source = File::open(&f.staged).map_err(|cause| RepoError::Io {
            path: f.staged.clone(),
            cause,
        })?;
        let (id, size) = session.put_content(&mut source)?;
        entries.push(TreeEntry {
            name: f.name.clone().into_bytes(),
            kind: EntryKind::File,
            id,
            size,
        });
    }
    session.finish()?;
    Ok(entries)
}

/// The commit putting `entries` into `folder` on `head`; None when they
/// are there as they are. Refused when `head` is not what the uploader
/// saw and one of the uploaded paths changed since.
pub(crate) fn commit_on(
    repo: &Repository,
    head: Option<ObjectId>,
    seen_tree: Option<ObjectId>,
    up: &UploadCommit<'_>,
    folder: &str,
    entries: &[TreeEntry],
) -> SyncResult<Option<ObjectId>> {
    let head_tree = head.map(|c| repo.commit(&c).map(|c| c.tree)).transpose()?;
    if head != up.seen {
        for f in up.files {
            let path = path_in(folder, &f.name);
            let at = |tree: Option<ObjectId>| -> SyncResult<_> {
                Ok(tree
                    .map(|t| lookup(&repo.store, &t, path.as_bytes()))
                    .transpose()?
                    .flatten())
            };
            if at(head_tree)? != at(seen_tree)? {
                return Err(SyncError::Refused(Refusal::ChangedSinceSeen {
                    path,
                    branch: up.branch.to_string(),
                }));
            }
        }
    }
    let mut session = repo.store.begin_write()?;
    let tree = put_in_folder(
        &mut session,
        head_tree.as_ref(),
        folder.as_bytes(),
        entries.to_vec(),
    )?;
    if head.is_some() && head_tree == Some(tree) {
        return Ok(None);
    }
    let commit = dmv_repo::store::object::Commit {
        tree,
        parents: head.into_iter().collect(),
        author: up.author.clone(),
        committer: up.author.clone(),
        message: up.message.to_string(),
    };
    let id = session.put_object(
        dmv_repo::store::ObjectKind::Commit,
        &dmv_repo::store::object::encode(&commit),
    )?;
    session.finish()?;
    Ok(Some(id))
}
