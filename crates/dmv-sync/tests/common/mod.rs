//! What the library tests share: staging and committing everything as
//! `dmv commit -a` would.

use dmv_repo::Repository;

pub fn commit_all(repo: &Repository, message: &str) {
    repo.add(&[Vec::new()], false, &|_, _| {}).unwrap();
    repo.commit_staged(message).unwrap().expect("something to commit");
}
