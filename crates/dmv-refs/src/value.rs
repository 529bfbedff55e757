//! The values every part of the ref store passes around.

/// An object id (BLAKE3), opaque to this crate.
pub type RefValue = [u8; 32];

/// One reflog record: a ref's move, who made it, when and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflogEntry {
    pub name: String,
    pub old: Option<RefValue>,
    pub new: Option<RefValue>,
    pub who: String,
    pub time: i64,
    pub tz_minutes: i16,
    pub message: String,
}
