//! The names of refs, in one place: which namespace holds branches, tags,
//! remote-tracking branches and stashes, and a ref's full name made from a
//! branch's or tag's as a user types it (`main` → `refs/heads/main`) and
//! back. Every crate builds and reads ref names through these.

/// Where branches live (`refs/heads/main`).
pub const BRANCHES: &str = "refs/heads/";
/// Where tags live (`refs/tags/v1`).
pub const TAGS: &str = "refs/tags/";
/// Where remote-tracking branches live (`refs/remotes/origin/main`).
pub const REMOTE_BRANCHES: &str = "refs/remotes/";
/// Where the logs merged by union live (`refs/meta/review`): every replica
/// fetches and pushes them, joining rather than replacing.
pub const UNION_LOGS: &str = "refs/meta/";
/// The review log: comments and reviews, one entry per commit.
pub const REVIEW_LOG: &str = "refs/meta/review";
/// Where `stash` keeps its entries.
pub const STASHES: &str = "refs/stashes/";

/// The full name of branch `name`.
pub fn branch_ref(name: impl AsRef<str>) -> String {
    format!("{BRANCHES}{}", name.as_ref())
}

/// The full name of tag `name`.
pub fn tag_ref(name: impl AsRef<str>) -> String {
    format!("{TAGS}{}", name.as_ref())
}

/// The full name of `remote`'s branch `branch`, as this replica tracks it.
pub fn remote_branch_ref(remote: impl AsRef<str>, branch: impl AsRef<str>) -> String {
    format!("{REMOTE_BRANCHES}{}/{}", remote.as_ref(), branch.as_ref())
}

/// A full ref name by what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefName<'a> {
    /// `refs/heads/NAME`.
    Branch(&'a str),
    /// `refs/tags/NAME`.
    Tag(&'a str),
    /// `refs/remotes/REMOTE/BRANCH`.
    RemoteBranch {
        /// The remote's name.
        remote: &'a str,
        /// The branch's name on the remote.
        branch: &'a str,
    },
    /// Anything else (`refs/stashes/…`, or a name outside `refs/`).
    Other(&'a str),
}

impl<'a> RefName<'a> {
    /// What the full name `full` names.
    pub fn parse(full: &'a str) -> RefName<'a> {
        if let Some(name) = full.strip_prefix(BRANCHES) {
            RefName::Branch(name)
        } else if let Some(name) = full.strip_prefix(TAGS) {
            RefName::Tag(name)
        } else if let Some((remote, branch)) = full
            .strip_prefix(REMOTE_BRANCHES)
            .and_then(|rest| rest.split_once('/'))
        {
            RefName::RemoteBranch { remote, branch }
        } else {
            RefName::Other(full)
        }
    }

    /// The name as git shows it: `main`, `v1`, `origin/main`, else without `refs/`.
    pub fn short(&self) -> String {
        match *self {
            RefName::Branch(name) | RefName::Tag(name) => name.to_string(),
            RefName::RemoteBranch { remote, branch } => format!("{remote}/{branch}"),
            RefName::Other(full) => full.strip_prefix("refs/").unwrap_or(full).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(branch_ref("main"), "refs/heads/main");
        assert_eq!(tag_ref(String::from("v1")), "refs/tags/v1");
        assert_eq!(
            remote_branch_ref("origin", "a/b"),
            "refs/remotes/origin/a/b"
        );
        assert_eq!(RefName::parse("refs/heads/a/b"), RefName::Branch("a/b"));
        assert_eq!(RefName::parse("refs/tags/v1"), RefName::Tag("v1"));
        assert_eq!(
            RefName::parse("refs/remotes/origin/a/b"),
            RefName::RemoteBranch {
                remote: "origin",
                branch: "a/b"
            }
        );
        assert_eq!(
            RefName::parse("refs/remotes/origin"),
            RefName::Other("refs/remotes/origin")
        );
        assert_eq!(RefName::parse("refs/remotes/nas/main").short(), "nas/main");
        assert_eq!(RefName::parse("refs/stashes/0").short(), "stashes/0");
    }
}
