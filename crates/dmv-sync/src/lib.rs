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
//! The files, each using only those listed before it: `error`,
//! `protocol`, `frame`, `remote` (the [`Remote`] trait and the capabilities
//! only some remotes have), `client` (the client of a DMV server over a
//! wire), `serve` (answering requests, over a pipe or for dmv-server), the
//! wires `stdio`, `ssh`, `http_client` and `in_process`, the remotes
//! `bucket_remote` and `memory_remote`, `relay` (answering requests from a
//! bucket, for a server in front of one), `remote_spec` (URLs and
//! connecting), `reach` (how each remote answered when last asked),
//! `named_remotes` (a repository's named remotes), `address_book` (the
//! URLs replicas publish of themselves, and metered ones), `locations`,
//! `objects`, `receive` and `send` (the transfer), then the operations
//! `fetch`, `push`, `peers` (offering a branch to a replica with a working
//! tree, and merging what peers offered), `pull`, `news` (whether a remote
//! moved since the last sync, cheaply), `clone`, `partial` (`get`, `restore`,
//! `write_file_at` and `set_slice` for partial replicas), `copies`
//! (`whereis`, `drop`, `fsck --from`), `path_locks` (`lock`, and pushes
//! checked against the remote's locks), `repair` (`fsck --repair`) and
//! `upload` (commits of files uploaded to a server, with a push's rules).
//!
//! A front end using the pipe transports (a path or ssh remote) or HTTP must
//! leave SIGPIPE ignored, as Rust programs start: writes to a pipe, and the
//! HTTP client's vectored socket writes, cannot refuse the signal, so only
//! then is a peer that goes away an error rather than the end of the
//! process. The library does not change the disposition behind the front
//! end's back (object storage blocks it on its own threads).

mod address_book;
#[cfg(feature = "s3")]
mod bucket_remote;
mod client;
mod clone;
mod copies;
mod error;
mod fetch;
mod frame;
#[cfg(feature = "http")]
mod http_client;
mod in_process;
mod keep_both;
mod locations;
mod memory_remote;
mod named_remotes;
mod news;
mod objects;
mod partial;
mod path_locks;
mod peers;
mod pieces;
pub mod protocol;
mod pull;
mod push;
mod reach;
mod receive;
#[cfg(feature = "s3")]
mod relay;
mod remote;
mod remote_spec;
mod repair;
mod send;
mod serve;
mod ssh;
mod stdio;
mod upload;

pub use address_book::{check_publishable, publish, set_metered, unpublish};
#[cfg(feature = "s3")]
pub use bucket_remote::BucketRemote;
pub use client::Client;
pub use clone::{clone, CloneOptions, ClonePlan, Cloned};
pub use copies::{
    check_copies, drop_files, whereis, CopiesChecked, CopyInfo, DropOptions, Dropped, FileCopies,
};
#[cfg(feature = "s3")]
pub use dmv_bucket::BucketOptions;
pub use dmv_repo::{Phase, Progress, Silent, Tally};
pub use error::{full_file_system, Refusal, SyncError, SyncResult, Violation};
pub use fetch::{fetch, prune_remote_branches, Fetched, FetchedRef};
pub use frame::{decode_message, Frame, FrameReader, FrameWriter};
pub use keep_both::{sync_keeping_both, SyncedKeepingBoth};
pub use locations::{exchange_locations, remote_replica};
pub use memory_remote::{MemoryRemote, Traffic};
pub use named_remotes::{
    add_remote, configured_spec, default_remote, find_remote, normalize_url, pull_source,
    remote_cache_dir, remotes_in_order, remove_remote, set_remote_url, NamedRemote, UrlChange,
};
pub use news::{moved_since_last_sync, NewsListener};
pub use objects::TransferStats;
pub use partial::{
    fetch_versions, get, resolve_conflicts, restore, set_slice, write_file_at, GetOptions, Got,
    SliceChanged,
};
pub use path_locks::list as list_locks;
pub use path_locks::{check_commit, commit, lock, lock_remote, unlock, CommitLockCheck};
pub use peers::{merge_offers, offer, offer_name};
pub use pieces::PieceFetcher;
pub use pull::{
    fetch_what_a_merge_reads, fetch_what_a_pick_reads, fetch_what_a_rebase_reads, pull,
    pull_rebase, pull_with, sync, sync_all, Pulled, Synced, SyncedAll,
};
pub use push::{current_branch, delete_remote_branches, follow_pushed, push, PushOptions, Pushed};
pub use reach::{Reach, ReachBook, Seen, NEAR_CONNECT, NEAR_SPEED};
pub use receive::fetch_objects;
#[cfg(feature = "s3")]
pub use relay::handle_relayed;
pub use remote::{
    KeepsCopies, KeepsPathLocks, ObjectProducer, PathLocks, Received, Remote, RemoteRefs,
};
pub use remote_spec::{LocalServer, RemoteSpec, Transport, DEFAULT_STALL_AFTER};
pub use repair::{repair, Repaired};
pub use send::{send_objects, PushRef};
pub use serve::{handle_request, serve_stdio, Caller};
pub use upload::{commit_uploaded, UploadCommit, Uploaded, UploadedFile};

/// Byte counters of everything written to and read from remotes (object
/// storage included), for `DMV_TRACE` and the tests that check what travelled
/// (they live in dmv-store, which every transport shares).
pub use dmv_repo::store::trace;
