//! How a long operation tells its front end how far it is: a terminal bar,
//! a web page, a log line, or nothing. Every layer reports through the one
//! trait here, so a front end writes one adapter for all of them.

use std::sync::atomic::{AtomicU64, Ordering};

/// What an operation is doing; each phase counts its own bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Receiving objects from a remote.
    Receiving,
    /// Sending objects to a remote.
    Sending,
    /// Writing files into the working tree.
    CheckingOut,
    /// Merging a fetched branch into the current one.
    Merging,
}

impl Phase {
    /// A short name to show, e.g. `"receiving"`.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Receiving => "receiving",
            Phase::Sending => "sending",
            Phase::CheckingOut => "checkout",
            Phase::Merging => "merging",
        }
    }
}

/// Where an operation reports how far it is (it may report from several
/// threads).
pub trait Progress: Sync {
    /// A new phase starts; the previous one is over. An operation of one
    /// phase may never say so.
    fn phase(&self, _phase: Phase) {}
    /// Bytes done out of total (0 when unknown) in the current phase.
    fn update(&self, done: u64, total: u64);
    /// The operation is over (also when it failed).
    fn finish(&self) {}
    /// Something the person should know that is no error (a symlink
    /// checked out as a plain file where the system makes none).
    fn warn(&self, _line: &str) {}
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn update(&self, _: u64, _: u64) {}
}

/// A closure of (done, total) reports as a progress does (its parameters
/// need their types written: `&|done: u64, total: u64| …`).
impl<F: Fn(u64, u64) + Sync> Progress for F {
    fn update(&self, done: u64, total: u64) {
        self(done, total)
    }
}

/// A running sum for work that learns of its bytes a piece at a time, from
/// any thread (packs read, pieces uploaded), and reports the sum.
pub struct Tally<'p> {
    progress: &'p dyn Progress,
    done: AtomicU64,
    total: AtomicU64,
}

impl<'p> Tally<'p> {
    /// Nothing done yet, of `total` bytes (0 when unknown).
    pub fn new(progress: &'p dyn Progress, total: u64) -> Tally<'p> {
        Tally {
            progress,
            done: AtomicU64::new(0),
            total: AtomicU64::new(total),
        }
    }

    /// A tally nobody is shown.
    pub fn silent() -> Tally<'static> {
        Tally::new(&Silent, 0)
    }

    /// `bytes` more are done. A known total is an estimate the sum may pass
    /// (objects added after it was counted), so the report stops at it.
    pub fn add(&self, bytes: u64) {
        let done = self.done.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let total = self.total.load(Ordering::Relaxed);
        self.progress
            .update(if total > 0 { done.min(total) } else { done }, total);
    }

    /// `bytes` more were found to do.
    pub fn expect(&self, bytes: u64) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Seen(Mutex<Vec<(u64, u64)>>);

    impl Progress for Seen {
        fn update(&self, done: u64, total: u64) {
            self.0.lock().unwrap().push((done, total));
        }
    }

    #[test]
    fn a_tally_reports_the_running_sum_and_stops_at_a_known_total() {
        let seen = Seen(Mutex::new(Vec::new()));
        let tally = Tally::new(&seen, 10);
        tally.add(4);
        tally.add(4);
        tally.add(4);
        tally.expect(5);
        tally.add(1);
        assert_eq!(
            *seen.0.lock().unwrap(),
            vec![(4, 10), (8, 10), (10, 10), (13, 15)]
        );
    }

    #[test]
    fn a_tally_of_unknown_total_reports_the_sum_with_total_zero() {
        let seen = Seen(Mutex::new(Vec::new()));
        let tally = Tally::new(&seen, 0);
        tally.add(7);
        tally.add(0);
        assert_eq!(*seen.0.lock().unwrap(), vec![(7, 0), (7, 0)]);
    }
}
