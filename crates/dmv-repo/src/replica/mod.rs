//! This repository as one replica among many: its slice (which file data it
//! keeps), the location log (who holds which file version) on disk and in its
//! journal, which files' data is here, what the slice lets go, and path locks.
//!
//! Read bottom up: `locations`,
//! `location_journal`, `location_claims`, `location_file`, `availability`, `retention`,
//! `locks`, `grants`, `audit` (who did what on a served repository).

pub(crate) mod audit;
pub(crate) mod availability;
pub(crate) mod grants;
pub(crate) mod location_claims;
pub(crate) mod location_file;
pub(crate) mod location_journal;
pub(crate) mod locations;
pub(crate) mod locks;
pub(crate) mod retention;
