//! Answering requests: over a pipe and for dmv-server's HTTP (`serve`),
//! from a bucket for a server in front of one (`relay`, feature `s3`),
//! commits of files uploaded to a server with a push's rules (`upload`),
//! and a repository answering in the same process as a remote
//! (`in_process`).
//!
//! Read bottom up: `audit` (what servers record of what they decided),
//! `pre_receive` (the admin's command that may refuse a ref move), `serve`, `relay`, `upload`, `in_process`.

pub(crate) mod audit;
pub(crate) mod in_process;
pub(crate) mod pre_receive;
#[cfg(feature = "s3")]
pub(crate) mod relay;
pub(crate) mod serve;
pub(crate) mod upload;
