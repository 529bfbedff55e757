//! What the library tests share: file content that does not compress or
//! repeat, and staging and committing everything as `dmv commit -a` would.

use dmv_repo::Repository;

/// `len` bytes of xorshift noise from `seed`.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn commit_all(repo: &Repository, message: &str) {
    repo.add(&[Vec::new()], false, &|_, _| {}).unwrap();
    repo.commit_staged(message).unwrap().expect("something to commit");
}
