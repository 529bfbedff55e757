//! How a long operation tells its front end how far it is: a terminal bar,
//! a web page, a log line, or nothing.

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
    /// A new phase starts; the previous one is over.
    fn phase(&self, phase: Phase);
    /// Bytes done out of total (0 when unknown) in the current phase.
    fn update(&self, done: u64, total: u64);
    /// The operation is over (also when it failed).
    fn finish(&self) {}
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn phase(&self, _: Phase) {}
    fn update(&self, _: u64, _: u64) {}
}
