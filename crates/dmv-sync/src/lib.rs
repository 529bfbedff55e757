#![warn(missing_docs)]
//! DMV replicas: the sync protocol (docs/protocol.md), its transports (a
//! local path or ssh through `dmv serve --stdio`, HTTP to `dmv serve`, an
//! S3-compatible object store with nothing of DMV running there), the
//! negotiation that sends only what the other side lacks, and the answering
//! of requests (`serve`: the HTTP server around it is the dmv-server crate).
//!
//! The operations a front end calls are [`clone`], [`fetch`], [`push`],
//! [`pull`] and [`sync`], with the named remotes of [`find_remote`].
//!
//! Four folders, each using only those before it (the layering test in
//! dmv-testkit checks it): `protocol` (the messages, their limits and
//! encoding, frames, errors; public as [`protocol`]), `transport` (the
//! [`Remote`] trait and the remotes: a pipe, ssh, HTTP, object storage,
//! memory), `serving` (answering requests, for a pipe, dmv-server, a
//! bucket's relay and in-process remotes) and `operations` (connecting by
//! URL, named remotes, the transfer, and what a front end calls). Each
//! folder's `mod.rs` gives the order of its files. The HTTP and
//! object-storage transports are cargo features (`http`, `s3`, both on by
//! default); without them the library has no HTTP, TLS or S3 crate.
//!
//! A front end using the pipe transports (a path or ssh remote) or HTTP must
//! leave SIGPIPE ignored, as Rust programs start: writes to a pipe, and the
//! HTTP client's vectored socket writes, cannot refuse the signal, so only
//! then is a peer that goes away an error rather than the end of the
//! process. The library does not change the disposition behind the front
//! end's back (object storage blocks it on its own threads).

mod operations;
pub mod protocol;
mod serving;
mod transport;

#[cfg(feature = "s3")]
pub use dmv_bucket::{
    BucketError, BucketKeys, BucketOptions, Identity, KeyEntry, Recipient, Resealed, Rotated,
    SharedRecords, MAX_STAGED_RECORD,
};
pub use dmv_repo::{Phase, Progress, Silent, Tally};
pub use operations::address_book::{check_publishable, publish, set_metered, unpublish};
#[cfg(feature = "s3")]
pub use operations::bucket_upload::commit_uploaded_to_bucket;
pub use operations::clone::{clone, CloneOptions, ClonePlan, Cloned};
pub use operations::copies::{
    check_copies, drop_files, whereis, CopiesChecked, CopyInfo, DropOptions, Dropped, FileCopies,
};
#[cfg(feature = "s3")]
pub use operations::device_keys::{
    device_key, device_key_path, read_identity, with_device_keys, PASSPHRASE_VAR,
};
#[cfg(feature = "s3")]
pub use operations::encryption::{change_keys, list_keys, reseal_remote, rotate_key, KeysChange};
pub use operations::fetch::{fetch, prune_remote_branches, Fetched, FetchedRef};
pub use operations::keep_both::{sync_keeping_both, SyncedKeepingBoth};
pub use operations::locations::{exchange_locations, remote_replica};
pub use operations::named_remotes::{
    add_remote, configured_spec, default_remote, find_remote, normalize_url, pull_source,
    remote_cache_dir, remotes_in_order, remove_remote, set_remote_url, NamedRemote, UrlChange,
};
pub use operations::news::{moved_since_last_sync, NewsListener};
pub use operations::partial::{
    fetch_versions, fetch_versions_along, get, resolve_conflicts, restore, set_slice,
    write_file_at, GetOptions, Got, SliceChanged,
};
pub use operations::path_locks::list as list_locks;
pub use operations::path_locks::{
    check_commit, commit, lock, lock_remote, release_landed_locks, stale_locks,
    take_locks_of_changes, unlock, CommitLockCheck, LocksForChanges,
};
pub use operations::peers::{merge_offers, offer, offer_name};
pub use operations::pieces::PieceFetcher;
pub use operations::pull::{
    pull, pull_rebase, pull_with, sync, sync_all, Pulled, Synced, SyncedAll,
};
pub use operations::push::{
    current_branch, delete_remote_branches, follow_pushed, push, PushOptions, Pushed,
};
pub use operations::reach::{Reach, ReachBook, Seen, NEAR_CONNECT, NEAR_SPEED};
pub use operations::receive::{fetch_file_data, fetch_objects, Along};
pub use operations::remote_spec::{LocalServer, RemoteSpec, Transport, DEFAULT_STALL_AFTER};
pub use operations::repair::{repair, Repaired};
pub use operations::replay::{cherry_pick, merge, merge_squash, rebase, revert};
pub use operations::send::{send_objects, PushRef};
pub use operations::union_logs::{join_union_logs, send_union_logs};
pub use operations::version_fetcher::{VersionFetcher, TELL_EVERY};
pub use protocol::error::{
    full_file_system, AddressError, Refusal, SyncError, SyncResult, TransportError, Violation,
};
pub use protocol::frame::{decode_message, Frame, FrameReader, FrameWriter};
pub use protocol::objects::TransferStats;
pub use protocol::SEALED_HUB_HEADER;
pub use serving::audit::{
    mention_events, record_in_dir, record_mentions_in_dir, EventSink, Events,
};
#[cfg(feature = "s3")]
pub use serving::audit::{read_bucket_audit, record_in_bucket};
pub use serving::pre_receive::{PreReceive, DEFAULT_HOOK_TIMEOUT, MAX_HOOK_OUTPUT, MAX_HOOK_PATHS};
#[cfg(feature = "s3")]
pub use serving::relay::handle_relayed;
pub use serving::serve::{handle_request, serve_stdio, Caller};
pub use serving::upload::{commit_uploaded, UploadCommit, Uploaded, UploadedFile};
#[cfg(feature = "s3")]
pub use transport::bucket_remote::BucketRemote;
pub use transport::client::Client;
#[cfg(feature = "http")]
pub use transport::http_client::post_once;
pub use transport::memory_remote::{MemoryRemote, Traffic};
pub use transport::remote::{
    KeepsCopies, KeepsPathLocks, ObjectProducer, PathLocks, Received, Remote, RemoteRefs,
};

/// Byte counters of everything written to and read from remotes (object
/// storage included), for `DMV_TRACE` and the tests that check what travelled
/// (they live in dmv-store, which every transport shares).
pub use dmv_repo::store::trace;
