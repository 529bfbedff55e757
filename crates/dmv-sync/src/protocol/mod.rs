//! The protocol (docs/protocol.md): what both ends of a wire share. The
//! messages and their limits (`messages`, public as `dmv_sync::protocol`),
//! the errors and the peer's violations of the protocol (`error`), frames
//! (`frame`), which objects a transfer moves in which order (`objects`),
//! and what a receiver of location pieces does with them (`location_run`).
//!
//! Read bottom up: `messages`, `error`, `frame`, `objects`, `location_run`.

pub(crate) mod error;
pub(crate) mod frame;
pub(crate) mod location_run;
mod messages;
pub(crate) mod objects;

pub use messages::*;
