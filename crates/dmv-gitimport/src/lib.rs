//! `dmv import git PATH`: a Git repository's history brought into DMV, so a
//! team moves without leaving its history behind.

#![warn(missing_docs)]

mod import;
mod lfs;
mod map;

pub use import::{import_git, ImportError, Imported};
pub use lfs::LfsPointer;
