//! Transports: the [`Remote`](remote::Remote) trait and the remotes that
//! carry the protocol. Over a wire (`client`): a pipe (`stdio`, to a local
//! path's `dmv serve --stdio`), ssh (`ssh`, the same over ssh) and HTTP
//! (`http_client`, feature `http`); and without a DMV server at the other
//! end: object storage (`bucket_remote`, feature `s3`) and memory
//! (`memory_remote`, for tests and embedders).
//!
//! Read bottom up: `remote`, `client`, `stdio`, `ssh`, `http_client`,
//! `bucket_remote`, `memory_remote`.

#[cfg(feature = "s3")]
pub(crate) mod bucket_remote;
pub(crate) mod client;
#[cfg(feature = "http")]
pub(crate) mod http_client;
pub(crate) mod memory_remote;
pub(crate) mod remote;
pub(crate) mod ssh;
pub(crate) mod stdio;
