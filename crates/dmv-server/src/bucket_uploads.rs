//! Browser uploads to a repository kept in a bucket. The servers of a
//! bucket share nothing but the bucket, so an upload is staged there
//! (dmv-bucket's `staging`): its record, which every piece that lands
//! replaces by compare-and-swap, and its pieces, one object each. Any
//! server resumes an upload another opened, after either is killed. The
//! commit is made in the server's view of the bucket (bucket_views) and
//! lands in the bucket as a relayed push does (dmv-sync's
//! `commit_uploaded_to_bucket`); the staged upload is removed after.
//!
//! The bounds are those of uploads to a directory (`staging`), counted
//! from the records in the bucket; the disk's free space is no bound of a
//! bucket's, but a piece is held in memory while it is sent on (at most
//! [`PIECES_AT_ONCE`] at once) and a commit puts its files together in
//! the server's cache first.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use dmv_sync::BucketRemote;
use serde::{Deserialize, Serialize};

use crate::bucket_views::BucketPlace;
use crate::staging::{Unavailable, OPEN_MAX, OPEN_PER_OWNER, STALE_AFTER};

/// Pieces being sent on to a bucket at once, each held in memory (at most
/// `uploads::PIECE_MAX` bytes).
pub(crate) const PIECES_AT_ONCE: usize = 4;
/// Pieces one upload may have: its record lists them all.
pub(crate) const MAX_PIECES: usize = 2048;
/// The version a record carries.
const RECORD_VERSION: u32 = 1;

/// An upload staged in a bucket, as its record says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Staged {
    /// [`RECORD_VERSION`]: another is not read.
    dmv_upload: u32,
    /// The upload's id (its record's name may be keyed: this one is not).
    id: String,
    /// The repository's name it was opened in.
    repo: String,
    /// Whose it is (`user NAME` or `token HASH`, as `uploads` says).
    owner: String,
    /// The size it was opened with.
    pub size: u64,
    /// When it was last touched, in seconds since the epoch.
    touched: u64,
    /// Its pieces in order: where each starts, its length, its object's name.
    pieces: Vec<(u64, u64, String)>,
}

impl Staged {
    /// The bytes that arrived.
    pub fn received(&self) -> u64 {
        self.pieces.iter().fold(0, |sum, p| sum.saturating_add(p.1))
    }

    fn stale(&self) -> bool {
        now().saturating_sub(self.touched) > STALE_AFTER.as_secs()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The folder of an owner's uploads: a hash of the owner, so neither a
/// user's name nor a token's hash is a key in the bucket.
fn group_of(owner: &str) -> String {
    blake3::derive_key("dmv upload owner v1", owner.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode(bytes: &[u8]) -> Option<Staged> {
    let staged: Staged = serde_json::from_slice(bytes).ok()?;
    (staged.dmv_upload == RECORD_VERSION
        && staged.pieces.len() <= MAX_PIECES
        && staged.received() <= staged.size)
        .then_some(staged)
}

fn encode(staged: &Staged) -> Vec<u8> {
    serde_json::to_vec(staged).unwrap_or_default()
}

fn io(e: impl std::fmt::Display) -> Unavailable {
    Unavailable::Io(std::io::Error::other(e.to_string()))
}

fn connect(place: &BucketPlace) -> Result<BucketRemote, Unavailable> {
    place.connect().map_err(io)
}

/// Opens upload `id` of `size` bytes in the bucket, within the bounds of
/// uploads to a directory counted over the bucket's records (stale ones
/// removed first). Returns how many of `owner`'s are open now. Blocks.
pub(crate) fn open(
    place: &BucketPlace,
    id: &str,
    repo: &str,
    owner: &str,
    size: u64,
    share: u64,
) -> Result<usize, Unavailable> {
    let remote = connect(place)?;
    let bucket = remote.bucket();
    let mut open = Vec::new();
    for record in bucket.staged_records(None).map_err(io)? {
        match decode(&record.body) {
            Some(s) if s.stale() => {
                let _ = bucket.remove_staged(&group_of(&s.owner), &s.id);
            }
            Some(s) => open.push(s),
            None => {}
        }
    }
    let theirs = || open.iter().filter(|u| u.owner == owner);
    let opened_by = theirs().count();
    if open.len() >= OPEN_MAX {
        return Err(Unavailable::Full);
    }
    if opened_by >= OPEN_PER_OWNER {
        return Err(Unavailable::YoursFull);
    }
    let reserved: u64 = theirs().map(|u| u.size).sum();
    if reserved.saturating_add(size) > share {
        return Err(Unavailable::YoursTooLarge { reserved, share });
    }
    let staged = Staged {
        dmv_upload: RECORD_VERSION,
        id: id.to_string(),
        repo: repo.to_string(),
        owner: owner.to_string(),
        size,
        touched: now(),
        pieces: Vec::new(),
    };
    match bucket.swap_staged_record(&group_of(owner), id, encode(&staged), None) {
        Ok(true) => Ok(opened_by + 1),
        Ok(false) => Err(io("an upload of that id exists")),
        Err(e) => Err(io(e)),
    }
}

/// Upload `id` of `repo`, if it is `owner`'s, and its record's version.
fn find_in(
    remote: &BucketRemote,
    id: &str,
    repo: &str,
    owner: &str,
) -> Result<(Staged, String), Unavailable> {
    let record = remote
        .bucket()
        .staged_record(&group_of(owner), id)
        .map_err(io)?
        .ok_or(Unavailable::Unknown)?;
    match decode(&record.body) {
        Some(s) if s.id == id && s.repo == repo && s.owner == owner && !s.stale() => {
            Ok((s, record.version))
        }
        _ => Err(Unavailable::Unknown),
    }
}

/// Upload `id` of `repo`, if it is `owner`'s. Blocks.
pub(crate) fn find(
    place: &BucketPlace,
    id: &str,
    repo: &str,
    owner: &str,
) -> Result<Staged, Unavailable> {
    find_in(&connect(place)?, id, repo, owner).map(|(s, _)| s)
}

/// Why a piece was not kept.
pub(crate) enum PieceRefused {
    Unavailable(Unavailable),
    /// It does not start where the upload has come to (`received`).
    NotAt {
        received: u64,
    },
    /// It would take the upload past its size, or past [`MAX_PIECES`].
    TooLarge {
        size: u64,
    },
}

/// Adds `bytes`, sent to start at `offset`, to upload `id`; the bytes
/// received after it. Of two servers adding a piece at once, one keeps
/// its piece; the other removes its own and says where the upload is.
/// Blocks.
pub(crate) fn add_piece(
    place: &BucketPlace,
    id: &str,
    repo: &str,
    owner: &str,
    offset: u64,
    bytes: Vec<u8>,
) -> Result<u64, PieceRefused> {
    let remote = connect(place).map_err(PieceRefused::Unavailable)?;
    let (mut staged, version) =
        find_in(&remote, id, repo, owner).map_err(PieceRefused::Unavailable)?;
    let received = staged.received();
    if offset != received {
        return Err(PieceRefused::NotAt { received });
    }
    if bytes.is_empty() {
        return Ok(received);
    }
    let len = bytes.len() as u64;
    if received + len > staged.size || staged.pieces.len() >= MAX_PIECES {
        return Err(PieceRefused::TooLarge { size: staged.size });
    }
    let mut tag = [0u8; 8];
    getrandom::getrandom(&mut tag).map_err(|e| PieceRefused::Unavailable(io(e)))?;
    // Random, so the piece of a server that loses the record's swap is
    // never the winner's object.
    let name: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    let (bucket, group) = (remote.bucket(), group_of(owner));
    bucket
        .put_staged_piece(&group, id, &name, bytes)
        .map_err(|e| PieceRefused::Unavailable(io(e)))?;
    staged.pieces.push((offset, len, name.clone()));
    staged.touched = now();
    match bucket.swap_staged_record(&group, id, encode(&staged), Some(&version)) {
        Ok(true) => Ok(received + len),
        won_elsewhere => {
            let _ = bucket.remove_staged_piece(&group, id, &name);
            if let Err(e) = won_elsewhere {
                return Err(PieceRefused::Unavailable(io(e)));
            }
            let now_at = find_in(&remote, id, repo, owner)
                .map(|(s, _)| s.received())
                .map_err(PieceRefused::Unavailable)?;
            Err(PieceRefused::NotAt { received: now_at })
        }
    }
}

/// Writes the bytes of upload `id` (whole: all `staged.size` of them) to
/// `out`, piece by piece. Blocks.
pub(crate) fn assemble(
    place: &BucketPlace,
    id: &str,
    owner: &str,
    staged: &Staged,
    out: &mut impl Write,
) -> Result<(), String> {
    let remote = place.connect()?;
    let group = group_of(owner);
    let mut at = 0;
    for (offset, len, name) in &staged.pieces {
        let bytes = remote
            .bucket()
            .staged_piece(&group, id, name)
            .map_err(|e| e.to_string())?;
        if *offset != at || bytes.len() as u64 != *len {
            return Err(format!(
                "a piece of upload {id} is not what its record says"
            ));
        }
        out.write_all(&bytes).map_err(|e| e.to_string())?;
        at += len;
    }
    Ok(())
}

/// Removes the staged uploads `ids` of `owner` (committed). Blocks.
pub(crate) fn finish(place: &BucketPlace, owner: &str, ids: &[&str]) {
    if let Ok(remote) = place.connect() {
        for id in ids {
            let _ = remote.bucket().remove_staged(&group_of(owner), id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_pinned() {
        let staged = Staged {
            dmv_upload: 1,
            id: "00112233445566778899aabbccddeeff".into(),
            repo: "photos".into(),
            owner: "user ann".into(),
            size: 10,
            touched: 1_767_225_600,
            pieces: vec![(0, 4, "0102030405060708".into())],
        };
        let bytes = encode(&staged);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"dmv_upload":1,"id":"00112233445566778899aabbccddeeff","repo":"photos","owner":"user ann","size":10,"touched":1767225600,"pieces":[[0,4,"0102030405060708"]]}"#
        );
        assert_eq!(decode(&bytes), Some(staged.clone()));
        assert_eq!(staged.received(), 4);
        assert_eq!(group_of("user ann").len(), 32);
        assert_ne!(group_of("user ann"), group_of("user bob"));
    }

    #[test]
    fn damaged_records_name_no_upload() {
        let good = r#"{"dmv_upload":1,"id":"i","repo":"r","owner":"user a","size":3,"touched":0,"pieces":[[0,3,"p"]]}"#;
        assert!(decode(good.as_bytes()).is_some());
        for bad in [
            r#"{"dmv_upload":2,"id":"i","repo":"r","owner":"user a","size":3,"touched":0,"pieces":[]}"#,
            r#"{"dmv_upload":1,"id":"i","repo":"r","owner":"user a","size":2,"touched":0,"pieces":[[0,3,"p"]]}"#,
            r#"{"dmv_upload":1,"id":"i","repo":"r","owner":"user a","size":3,"touched":0,"pieces":[],"x":1}"#,
            "",
            "{",
        ] {
            assert_eq!(decode(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn a_record_of_more_pieces_than_allowed_names_no_upload() {
        let record = |pieces: usize| Staged {
            dmv_upload: 1,
            id: "i".into(),
            repo: "r".into(),
            owner: "user a".into(),
            size: u64::MAX,
            touched: 0,
            // The longest a record's numbers and names are.
            pieces: (0..pieces as u64)
                .map(|i| (u64::MAX - 1, u64::MAX, format!("{i:016x}")))
                .collect(),
        };
        assert!(decode(&encode(&record(MAX_PIECES))).is_some());
        assert!(encode(&record(MAX_PIECES)).len() < (dmv_sync::MAX_STAGED_RECORD as usize));
        assert_eq!(decode(&encode(&record(MAX_PIECES + 1))), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = decode(&bytes);
        }
    }
}
