//! The values every part of the ref store passes around.

/// An object id (BLAKE3), opaque to this crate.
pub type RefValue = [u8; 32];

/// One reflog record: a ref's move, who made it, when and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflogEntry {
    /// The ref that moved.
    pub name: String,
    /// Its value before; None: it was created.
    pub old: Option<RefValue>,
    /// Its value after; None: it was deleted.
    pub new: Option<RefValue>,
    /// Who moved it, as given to [`crate::Transaction::commit`].
    pub who: String,
    /// When, as given to [`crate::Transaction::commit`] (dmv-repo gives
    /// seconds since the Unix epoch).
    pub time: i64,
    /// The time zone offset given with `time`, in minutes.
    pub tz_minutes: i16,
    /// Why, as given to [`crate::Transaction::commit`].
    pub message: String,
}
