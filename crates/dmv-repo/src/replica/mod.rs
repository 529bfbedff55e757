//! This repository as one replica among many: its slice (which file data it
//! keeps), the location log (who holds which file version) on disk and in its
//! journal, which files' data is here, what the slice lets go, path locks, and
//! freeing file data safely against other replicas.
//!
//! Read bottom up: `slice` (which the configuration reads), `locations`,
//! `location_journal`, `location_claims`, `location_file`, `availability`, `retention`,
//! `locks`, `dropping`.

pub(crate) mod availability;
pub(crate) mod dropping;
pub(crate) mod location_claims;
pub(crate) mod location_file;
pub(crate) mod location_journal;
pub(crate) mod locations;
pub(crate) mod locks;
pub(crate) mod retention;
pub(crate) mod slice;
