//! Fault injection for the tests, the one place where a process reads the
//! variables that make it fail, stall or shorten its waits on purpose.
//! Compiled in only with the `fault-injection` feature, which the test
//! suites turn on through their dev-dependencies and which release builds
//! (`cargo build`, `cargo install`, the packages) leave off: there, every
//! call here is empty and no such variable is read.
//!
//! - `DMV_FAILPOINT=NAME[@N][,NAME[@N]…]` ends the process at the N-th
//!   (default first) time it reaches the named point: [`point`] aborts
//!   with a line on stderr, [`kill_point`] kills itself as `kill -9` would.
//! - `DMV_PAUSEPOINT=NAME[@N]:FILE` stops it at the N-th time it reaches
//!   [`point`] NAME: it creates FILE and waits until FILE is removed, so a
//!   test can run another command at exactly that moment, or kill it there.
//! - [`test_setting`] reads the few other test-only settings (a lease's
//!   length, a protocol version to pretend, bytes after which to abort).

#[cfg(feature = "fault-injection")]
mod armed {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// A point named in `DMV_FAILPOINT` or `DMV_PAUSEPOINT`, and how often it was reached.
    pub(super) struct Armed {
        name: String,
        nth: u64,
        hits: AtomicU64,
    }

    impl Armed {
        pub(super) fn parse(spec: &str) -> Armed {
            let (name, nth) = match spec.split_once('@') {
                Some((n, k)) => (n, k.parse().unwrap_or(1)),
                None => (spec, 1),
            };
            Armed {
                name: name.to_string(),
                nth,
                hits: AtomicU64::new(0),
            }
        }

        /// Counts a reach of `name`: true when this is the armed one.
        pub(super) fn fires(&self, name: &str) -> bool {
            self.name == name && self.hits.fetch_add(1, Ordering::SeqCst) + 1 == self.nth
        }
    }

    pub(super) fn fail_points() -> &'static [Armed] {
        static ARMED: OnceLock<Vec<Armed>> = OnceLock::new();
        ARMED.get_or_init(|| {
            std::env::var("DMV_FAILPOINT")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Armed::parse)
                .collect()
        })
    }

    /// The pause point and its file, once; a pause happens at most once per process.
    pub(super) fn pause_point() -> Option<&'static (Armed, std::path::PathBuf)> {
        static PAUSE: OnceLock<Option<(Armed, std::path::PathBuf)>> = OnceLock::new();
        PAUSE
            .get_or_init(|| {
                let spec = std::env::var("DMV_PAUSEPOINT").ok()?;
                let (point, file) = spec.split_once(':')?;
                Some((Armed::parse(point), file.into()))
            })
            .as_ref()
    }

    pub(super) static PAUSED: AtomicBool = AtomicBool::new(false);
}

/// A named point between two durable steps: the process aborts here when
/// `DMV_FAILPOINT` arms it, or pauses when `DMV_PAUSEPOINT` does.
#[inline]
pub fn point(name: &str) {
    #[cfg(feature = "fault-injection")]
    {
        use std::sync::atomic::Ordering;
        if armed::fail_points().iter().any(|a| a.fires(name)) {
            eprintln!("dmv: failpoint {name} reached, aborting");
            std::process::abort();
        }
        if let Some((armed, file)) = armed::pause_point() {
            if armed.fires(name)
                && !armed::PAUSED.swap(true, Ordering::SeqCst)
                && std::fs::write(file, std::process::id().to_string()).is_ok()
            {
                while file.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = name;
}

/// A named point where the process, when `DMV_FAILPOINT` arms it, ends as
/// an outside `kill -9` would: no line, no handlers, no flushing (the ref
/// store's crash tests).
#[inline]
pub fn kill_point(name: &str) {
    #[cfg(feature = "fault-injection")]
    if armed::fail_points().iter().any(|a| a.fires(name)) {
        crate::kill_self();
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = name;
}

/// A test-only setting (`DMV_TEST_…`, `DMV_ABORT_AFTER_BYTES`) when fault
/// injection is compiled in and the variable is set; None otherwise.
pub fn test_setting(name: &str) -> Option<String> {
    #[cfg(feature = "fault-injection")]
    {
        std::env::var(name).ok()
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = name;
        None
    }
}

#[cfg(all(test, feature = "fault-injection"))]
mod tests {
    use super::armed::Armed;

    #[test]
    fn a_point_armed_at_its_third_reach_fires_then_and_only_then() {
        let armed = Armed::parse("refs-after-lock@3");
        let fired: Vec<bool> = (0..5).map(|_| armed.fires("refs-after-lock")).collect();
        assert_eq!(fired, [false, false, true, false, false]);
        assert!(!armed.fires("refs-after-table-write"));
        // Without a count, the first reach; a count that is not a number reads as 1.
        assert!(Armed::parse("pack-sealed").fires("pack-sealed"));
        assert!(Armed::parse("pack-sealed@x").fires("pack-sealed"));
    }
}
