//! Crash-test hooks. `DMV_FAILPOINT=name` (or `name@N` to fire on the N-th
//! hit; several separated by commas) makes the process SIGKILL itself at that
//! point, which is exactly what a `kill -9` or a power cut looks like to the
//! files on disk (minus unflushed page cache, which fsync ordering covers).
//! Armed through [`dmv_os::fault`], compiled in only for the tests.

/// Every fail point, in the order a transaction or compaction reaches them.
pub const FAIL_POINTS: &[&str] = &[
    "refs-after-lock",
    "refs-during-table-write",
    "refs-after-table-write",
    "refs-after-list-write",
    "refs-after-list-rename",
    "refs-compact-after-lock",
    "refs-compact-during-table-write",
    "refs-compact-after-table-write",
    "refs-compact-after-list-write",
    "refs-compact-after-list-rename",
    "refs-compact-during-remove",
];

/// Kills the process here when `DMV_FAILPOINT` arms `name` (see
/// [`dmv_os::fault::kill_point`]; empty in release builds).
pub(crate) fn hit(name: &'static str) {
    if name.is_empty() {
        return;
    }
    debug_assert!(FAIL_POINTS.contains(&name));
    dmv_os::fault::kill_point(name);
}
