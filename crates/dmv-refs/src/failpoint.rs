//! Crash-test hooks. `DMV_FAILPOINT=name` (or `name@N` to fire on the N-th
//! hit; several separated by commas) makes the process SIGKILL itself at that
//! point, which is exactly what a `kill -9` or a power cut looks like to the
//! files on disk (minus unflushed page cache, which fsync ordering covers).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

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

struct Armed {
    name: String,
    nth: u64,
    hits: AtomicU64,
}

fn armed() -> &'static [Armed] {
    static ARMED: OnceLock<Vec<Armed>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let Ok(spec) = std::env::var("DMV_FAILPOINT") else {
            return Vec::new();
        };
        spec.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let s = s.trim();
                let (name, nth) = match s.split_once('@') {
                    Some((n, k)) => (n, k.parse().unwrap_or(1)),
                    None => (s, 1),
                };
                Armed {
                    name: name.to_string(),
                    nth,
                    hits: AtomicU64::new(0),
                }
            })
            .collect()
    })
}

pub(crate) fn hit(name: &'static str) {
    if name.is_empty() {
        return;
    }
    debug_assert!(FAIL_POINTS.contains(&name));
    for a in armed() {
        if a.name == name && a.hits.fetch_add(1, Ordering::SeqCst) + 1 == a.nth {
            // The same as an external kill -9: no core dump, no handlers,
            // no flushing of user-space buffers.
            dmv_os::kill_self();
        }
    }
}
