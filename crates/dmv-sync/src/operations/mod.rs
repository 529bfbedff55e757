//! What a front end calls: connecting to a remote by URL (`remote_spec`),
//! how each remote answered when last asked (`reach`), a repository's
//! named remotes (`named_remotes`) and the URLs replicas publish of
//! themselves (`address_book`); the transfer (`locations`, `receive`,
//! `send`); and the operations `fetch`, `push`, `path_locks` (`lock`, and
//! pushes checked against the remote's locks), `peers` (offering a branch
//! to a replica with a working tree, and merging what peers offered),
//! `pull` (and `sync`), `replay` (merge, cherry-pick, revert and rebase,
//! fetching first in a partial replica what their line merges read), `news` (whether a remote moved since the last sync,
//! cheaply), `keep_both`, `clone`, `partial` (`get`, `restore`,
//! `write_file_at` and `set_slice` for partial replicas), `pieces`, `copies`
//! (`whereis`, `drop`, `fsck --from`), `union_logs` (the review log,
//! joined on every fetch and push), `repair` (`fsck --repair`) and
//! `bucket_upload` (a browser's upload into a bucket, feature `s3`).
//!
//! Read bottom up in that order.

pub(crate) mod address_book;
#[cfg(feature = "s3")]
pub(crate) mod bucket_upload;
pub(crate) mod clone;
pub(crate) mod copies;
#[cfg(feature = "s3")]
pub(crate) mod device_keys;
#[cfg(feature = "s3")]
pub(crate) mod encryption;
pub(crate) mod fetch;
pub(crate) mod keep_both;
pub(crate) mod locations;
pub(crate) mod named_remotes;
pub(crate) mod news;
pub(crate) mod partial;
pub(crate) mod path_locks;
pub(crate) mod peers;
pub(crate) mod pieces;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod reach;
pub(crate) mod receive;
pub(crate) mod remote_spec;
pub(crate) mod repair;
pub(crate) mod replay;
pub(crate) mod send;
pub(crate) mod union_logs;
pub(crate) mod version_fetcher;
