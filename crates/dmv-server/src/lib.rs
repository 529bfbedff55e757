#![warn(missing_docs)]
//! `dmv serve`: repositories over HTTP or HTTPS for the open network, with
//! their web UI. A leaf above dmv-sync: the requests are answered by
//! [`dmv_sync::handle_request`], exactly as over ssh; this crate adds what
//! a server facing the internet needs around it (tokens and sessions,
//! budgets for connections, bodies and waits, TLS, the web UI's pages from
//! dmv-web), so an embedder of the sync library does not build a server.
//!
//! The files, each using only those listed before it: `tokens_file`
//! (tokens kept as hashes, managed without editing TOML), `server_config` (the
//! TOML file), `sessions` (web logins and the rationing of token guesses),
//! `connections` (how many, and which to evict), `bucket_views` (the
//! web UI's local views of served buckets), `staging` (the
//! files being uploaded from browsers), `bucket_uploads` (those staged in
//! a bucket), `channel` (a blocking
//! writer feeding an async body), `webhooks` (events POSTed, signed, retried), `server_state` (what every request
//! shares), `web` (the UI's routes), `uploads` (files uploaded from
//! browsers, in pieces, then committed) and `server` (the listener and the
//! protocol's routes).

mod bucket_uploads;
mod bucket_views;
mod channel;
mod connections;
mod requests;
mod sealed;
mod server;
mod server_config;
mod server_state;
mod sessions;
mod staging;
mod tokens_file;
mod uploads;
mod web;
mod webhooks;

pub use server::{run, serve, MAX_HEAD_BYTES, MAX_REQUEST_BYTES};
pub use server_config::{
    BrowseAccess, GroupConfig, NamedToken, ReadAccess, ServerConfig, TokenAccess, TokenEntry,
    WebhookConfig, DEFAULT_IDLE_TIMEOUT_SECS,
};
pub use tokens_file::{
    FileToken, NewToken, TokensFile, MAX_FIELD_BYTES, MAX_FILE_BYTES, MAX_ID_BYTES, MAX_TOKENS,
};
