#![warn(missing_docs)]
//! What runs unattended in a working tree, for `dmv watch` and any other
//! front end: the loop that commits what settled, syncs with every remote
//! keeping both versions of a conflict, and frees the data others hold
//! (`agent`); its log, kept small however long it runs (`watch_log`); and
//! the login service that starts it (`service`). The front end owns the
//! words, the signals and the terminal: the loop tells it what happened
//! as [`Event`]s.
//!
//! Read bottom up: `watch_log`, `service`, `agent`.

mod agent;
mod service;
mod watch_log;

pub use agent::{run, AgentError, Event, Reporter, Waiting, WatchOptions};
pub use service::{launchd_plist, service_name, systemd_unit};
pub use watch_log::{WatchLog, LOG_FILE, LOG_LIMIT};
