//! The working tree and its dirstate: walking it, comparing it with the
//! dirstate, staging (`add`, `rm`, `mv`, `clean`) and writing trees out
//! (checkout, and a clone's files while their chunks arrive). None of it
//! knows of merges: what consults a merge in progress is in `operations`.
//!
//! Read bottom up: `dirstate`, `files`, `walk`, `sieve`,
//! `status`, `staging`, `folded_names`, `checkout`, `early`.

pub(crate) mod checkout;
pub(crate) mod dirstate;
pub(crate) mod early;
pub(crate) mod files;
pub(crate) mod folded_names;
pub(crate) mod sieve;
pub(crate) mod staging;
pub(crate) mod status;
pub(crate) mod walk;
