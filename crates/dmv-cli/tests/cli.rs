//! dmv-cli's behaviour tests: one binary, a module per suite (`cargo
//! test -p dmv-cli --test cli mount::` runs one suite). One binary
//! compiles the shared helpers once and links once where 41 did each
//! (after a change to `common`, 51 s instead of 112 s on two cores), and
//! the suites' longest tests run beside other suites' rather than alone.
//! `platforms` stays a binary of its own: it is run again on each
//! packaged build (`DMV_TEST_BIN`).

mod common;

mod audit;
mod bitflips;
mod checkout;
mod concurrent;
mod corruption;
mod crash;
mod crowd;
mod cuts;
mod encrypted;
mod everyday;
mod fleet;
mod format;
mod fulldisk;
mod fuzz_routes;
mod git_habits;
mod git_text;
mod hooks;
mod hostile;
mod import;
mod kills;
mod left_running;
mod locks;
mod merge;
mod mount;
mod objstore;
mod partial;
mod permissions;
mod rebase;
mod refs;
mod repair;
mod review;
mod revisions;
mod scale;
mod serve_hostile;
mod serve_quick;
mod stalls;
mod sync;
mod watch;
mod web;
mod web_review;
mod worktree;
