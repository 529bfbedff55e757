//! The checks `fsck` makes of a repository's files other than the object
//! store (which `dmv_store::verify` checks): every one a flipped bit or a
//! cut write can damage. Each problem is one line naming the file.

use crate::error::RepoResult;
use crate::locations::ReplicaId;
use crate::refs::Head;
use crate::repo::Repository;

impl Repository {
    /// What is wrong with the refs, HEAD, the dirstate, the location log and
    /// the replica files (nothing: an empty list).
    pub fn check_files(&self) -> RepoResult<Vec<String>> {
        let mut problems = Vec::new();
        if let Err(e) = self.refs.verify() {
            problems.push(format!("refs: {e}"));
        }
        match self.head() {
            Err(e) => problems.push(format!("HEAD: {e}")),
            Ok(Head::Branch(name)) => {
                // A branch with no commits yet is normal only while no branch has any.
                let branches = self.refs.list("refs/heads/")?;
                if self.refs.get(&name)?.is_none() && !branches.is_empty() {
                    problems.push(format!("HEAD names {name}, which does not exist (branches: {})", branches.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")));
                }
            }
            Ok(Head::Detached(id)) => {
                if !self.store.contains(&id)? {
                    problems.push(format!("HEAD is detached at {id}, which is not in the store"));
                }
            }
        }
        if let Err(e) = self.load_dirstate() {
            problems.push(format!("dirstate: {e}"));
        }
        if let Err(e) = self.load_locations() {
            problems.push(format!("location log: {e}"));
        }
        let id_path = self.dmv.join("replica-id");
        if let Ok(text) = std::fs::read_to_string(&id_path) {
            // Exactly as written: a stray byte is damage even where parsing would forgive it.
            if ReplicaId::parse(&text).is_none_or(|id| text != format!("{id}\n")) {
                problems.push(format!("{}: not a replica id", id_path.display()));
            }
        }
        let replicas = self.dmv.join("replicas");
        if let Ok(text) = std::fs::read_to_string(&replicas) {
            for (n, line) in text.lines().enumerate() {
                let parsed = line.split_once(' ').and_then(|(id, _)| ReplicaId::parse(id));
                if parsed.is_none_or(|id| !line.starts_with(&format!("{id} "))) {
                    problems.push(format!("{} line {}: not a replica id and name", replicas.display(), n + 1));
                }
            }
        }
        Ok(problems)
    }
}
