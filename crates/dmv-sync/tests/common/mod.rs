//! What the library tests share: staging and committing everything as
//! `dmv commit -a` would.

use dmv_repo::{Repository, Silent};

pub fn commit_all(repo: &Repository, message: &str) {
    repo.worktree().add(&[Vec::new()], false, &Silent).unwrap();
    repo.commit_staged(message)
        .unwrap()
        .expect("something to commit");
}
