//! Branches and tags as a user names them (`main`, `v1`), a tag plain or
//! annotated (a tag object with its tagger and message): creating,
//! deleting and renaming them with the rules every front end keeps (the
//! checked-out branch is not deleted; renaming it moves HEAD along).

use crate::repository::handles::History;
use dmv_store::object::{encode, Tag};
use dmv_store::{ObjectId, ObjectKind};

use crate::ref_names::{branch_ref, tag_ref, BRANCHES, REMOTE_BRANCHES};
use crate::repository::config::Upstream;
use crate::repository::refs::{validate_ref_name, Head, RefUpdate};
use crate::repository::repo::Repository;
use crate::RepoError;
use crate::RepoResult;

/// HEAD's branch against its upstream, as `status` says it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Tracking {
    /// The upstream's short name, `REMOTE/BRANCH`.
    pub upstream: String,
    /// Commits HEAD has that the upstream lacks, and the other way round;
    /// None when the remote-tracking branch is gone (or never fetched).
    pub counts: Option<(usize, usize)>,
}

impl Repository {
    /// Makes branch `name`, which only a remote has so far, here from its
    /// remote-tracking branch, following it (as git's `switch NAME`).
    /// Returns that branch's short name (`origin/NAME`).
    pub(crate) fn branch_from_remote(&mut self, name: &str) -> RepoResult<String> {
        let full = branch_ref(name);
        match self.history().remote_branches_named(name)?.as_slice() {
            [] => Err(RepoError::NoSuchBranch {
                name: name.to_string(),
            }),
            [(remote_ref, id)] => {
                self.create_ref(&full, *id, &format!("branch: created from {remote_ref}"))?;
                let short = remote_ref.trim_start_matches(REMOTE_BRANCHES);
                if let Some((remote, branch)) = short.split_once('/') {
                    let upstream = Upstream {
                        remote: remote.to_string(),
                        branch: branch.to_string(),
                    };
                    self.update_config(|cfg| {
                        Ok::<_, RepoError>(cfg.upstreams.insert(name.to_string(), upstream))
                    })?;
                }
                Ok(short.to_string())
            }
            several => Err(RepoError::BranchOfSeveralRemotes {
                name: name.to_string(),
                remotes: several
                    .iter()
                    .map(|(r, _)| r.trim_start_matches(REMOTE_BRANCHES).to_string())
                    .collect(),
            }),
        }
    }
}

impl History<'_> {
    /// The remote-tracking branches named `name` on any remote
    /// (`refs/remotes/REMOTE/NAME`), for `switch NAME` of a branch that only
    /// a remote has so far.
    pub(crate) fn remote_branches_named(&self, name: &str) -> RepoResult<Vec<(String, ObjectId)>> {
        let mut found = self.refs.list(REMOTE_BRANCHES)?;
        found.retain(|(full, _)| {
            full.strip_prefix(REMOTE_BRANCHES)
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, branch)| branch == name)
        });
        Ok(found)
    }

    /// The full name of the branch HEAD is on (None: detached).
    pub fn head_branch(&self) -> RepoResult<Option<String>> {
        Ok(match self.head()? {
            Head::Branch(b) => Some(b),
            Head::Detached(_) => None,
        })
    }

    /// What the branch HEAD is on follows, if it follows a remote's branch.
    pub fn head_upstream(&self) -> RepoResult<Option<Upstream>> {
        let branch = self.head_branch()?;
        Ok(branch
            .as_deref()
            .and_then(|full| full.strip_prefix(BRANCHES))
            .and_then(|b| self.config.upstreams.get(b))
            .cloned())
    }

    /// How HEAD's branch stands against its upstream's remote-tracking
    /// branch, as of the last fetch (no network): None when it follows none.
    pub fn tracking(&self) -> RepoResult<Option<Tracking>> {
        let Some(up) = self.head_upstream()? else {
            return Ok(None);
        };
        let name = format!("{}/{}", up.remote, up.branch);
        let (Some(head), Some(theirs)) = (
            self.head_commit()?,
            self.refs.get(&format!("{REMOTE_BRANCHES}{name}"))?,
        ) else {
            return Ok(Some(Tracking {
                upstream: name,
                counts: None,
            }));
        };
        let ahead = self.walk_between(&[head], &[theirs])?.count();
        let behind = self.walk_between(&[theirs], &[head])?.count();
        Ok(Some(Tracking {
            upstream: name,
            counts: Some((ahead, behind)),
        }))
    }

    /// Deletes branch `name`; returns where it was. Unless `force`, only a
    /// branch whose commits HEAD or one of its remote-tracking branches
    /// (`refs/remotes/*/NAME`) also holds: the commits of any other would be
    /// kept by nothing but the reflog, and gc would drop them (git's rule).
    pub fn delete_branch(&self, name: &str, force: bool) -> RepoResult<ObjectId> {
        let full = branch_ref(name);
        if self.head_branch()?.as_deref() == Some(full.as_str()) {
            return Err(RepoError::BranchCheckedOut {
                name: name.to_string(),
            });
        }
        let tip = self.refs.get(&full)?.ok_or_else(|| RepoError::NoSuchRef {
            kind: "branch",
            name: name.to_string(),
        })?;
        if !force {
            let mut keepers: Vec<ObjectId> = self.head_commit()?.into_iter().collect();
            keepers.extend(
                self.refs
                    .list(REMOTE_BRANCHES)?
                    .into_iter()
                    .filter(|(r, _)| r.rsplit_once('/').is_some_and(|(_, b)| b == name))
                    .map(|(_, id)| id),
            );
            let mut merged = false;
            for k in keepers {
                if k == tip || self.merge_base(tip, k)? == Some(tip) {
                    merged = true;
                    break;
                }
            }
            if !merged {
                return Err(RepoError::BranchNotMerged {
                    name: name.to_string(),
                });
            }
        }
        self.delete_named_ref(&full, "branch", name, "branch: deleted")
    }

    /// Renames branch `old` to `new` (which must not exist); HEAD follows if it was on `old`.
    pub fn rename_branch(&self, old: &str, new: &str) -> RepoResult<()> {
        let (old_full, new_full) = (branch_ref(old), branch_ref(new));
        let id = self
            .refs
            .get(&old_full)?
            .ok_or_else(|| RepoError::NoSuchRef {
                kind: "branch",
                name: old.to_string(),
            })?;
        self.update_refs(
            &[
                RefUpdate {
                    name: new_full.clone(),
                    expected: Some(None),
                    new: Some(id),
                },
                RefUpdate {
                    name: old_full.clone(),
                    expected: Some(Some(id)),
                    new: None,
                },
            ],
            &self.who(),
            &format!("branch: renamed {old_full} to {new_full}"),
        )?;
        if self.head_branch()?.as_deref() == Some(old_full.as_str()) {
            self.set_head(&Head::Branch(new_full))?;
        }
        Ok(())
    }

    /// Points tag `name` at `id`, made if it does not exist (`tag -f`);
    /// returns what it pointed to before. Moved only from where it was read
    /// (a tag moved meanwhile by another command is reported, not overwritten).
    pub fn set_tag(&self, name: &str, id: ObjectId) -> RepoResult<Option<ObjectId>> {
        let full = tag_ref(name);
        let old = self.refs.get(&full)?;
        if old.is_none() {
            self.create_ref(&full, id, "tag: created")?;
        } else {
            self.update_refs(
                &[RefUpdate {
                    name: full,
                    expected: Some(old),
                    new: Some(id),
                }],
                &self.who(),
                "tag: moved",
            )?;
        }
        Ok(old)
    }

    /// Makes `name` an annotated tag of commit `target`: a tag object saying
    /// who made it, when, and `message`, which the ref then holds. An
    /// existing tag is refused, or replaced with `force`. Returns the tag
    /// object's id and what the tag held before.
    pub fn create_annotated_tag(
        &self,
        name: &str,
        target: ObjectId,
        message: &str,
        force: bool,
    ) -> RepoResult<(ObjectId, Option<ObjectId>)> {
        let full = tag_ref(name);
        validate_ref_name(&full)?;
        if self.store.kind_of(&target)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit {
                what: target.to_hex(),
            });
        }
        if !force && self.refs.get(&full)?.is_some() {
            return Err(RepoError::RefExists { name: full });
        }
        let tag = Tag {
            target,
            name: name.to_string(),
            tagger: self.signer()?,
            message: message.to_string(),
        };
        let mut session = self.store.begin_write()?;
        let id = session.put_object(ObjectKind::Tag, &encode(&tag))?;
        session.finish()?;
        dmv_store::failpoint("tag-object-written");
        // The session holds gc off until the ref keeps the tag.
        let old = match force {
            true => self.set_tag(name, id)?,
            false => self.create_ref(&full, id, "tag: created").map(|()| None)?,
        };
        drop(session);
        Ok((id, old))
    }

    /// Deletes tag `name`; returns what it pointed to.
    pub fn delete_tag(&self, name: &str) -> RepoResult<ObjectId> {
        self.delete_named_ref(&tag_ref(name), "tag", name, "tag: deleted")
    }

    fn delete_named_ref(
        &self,
        full: &str,
        kind: &'static str,
        name: &str,
        message: &str,
    ) -> RepoResult<ObjectId> {
        let old = self.refs.get(full)?.ok_or_else(|| RepoError::NoSuchRef {
            kind,
            name: name.to_string(),
        })?;
        self.update_refs(
            &[RefUpdate {
                name: full.to_string(),
                expected: Some(Some(old)),
                new: None,
            }],
            &self.who(),
            message,
        )?;
        Ok(old)
    }
}
