//! The connections `dmv serve` holds open, bounded in number. Past the
//! bound a new connection closes the one that has been quiet longest
//! among those the server is not working for (idle between requests, or
//! waiting for a request to arrive, or an answer waiting for its client to
//! take what was written): a thousand idle, trickling or never-reading
//! connections from one client then cost a legitimate client nothing,
//! where waiting for their timeouts would cost it up to 30 s or more. When
//! the server is working for every connection, the new one is closed at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

/// What one connection is doing, updated as it works.
pub(crate) struct Activity {
    started: Instant,
    /// Milliseconds after `started` of the last byte moved either way.
    last_io_ms: AtomicU64,
    /// Requests being answered...
    busy: AtomicUsize,
    /// ...of which waiting for the client to send the rest of the request.
    waiting: AtomicUsize,
    /// A write waits for the client to take what was written.
    write_blocked: AtomicBool,
    /// Told to close.
    pub closed: Notify,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            started: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            write_blocked: AtomicBool::new(false),
            closed: Notify::new(),
        }
    }

    pub fn moved_bytes(&self) {
        self.last_io_ms
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Notes that a write could not proceed: the client is not reading.
    pub fn write_blocked(&self) {
        self.write_blocked.store(true, Ordering::Relaxed);
    }

    /// Notes that a write went through.
    pub fn write_unblocked(&self) {
        self.write_blocked.store(false, Ordering::Relaxed);
    }

    /// Marks a request as being answered until the guard drops.
    pub fn answering(self: &Arc<Self>) -> Answering {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Answering(self.clone())
    }

    /// Marks a request being answered as waiting on its client until the guard drops.
    pub fn waiting_on_client(self: &Arc<Self>) -> WaitingOnClient {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        WaitingOnClient(self.clone())
    }

    /// Whether closing it would cut work of the server's (not a wait on
    /// the client: for the rest of a request, or to take the answer written
    /// so far; 520 downloads that never read had held every slot for the
    /// whole idle timeout). Among the waits the quietest goes first, so a
    /// client reading at full speed, whose writes wait for milliseconds at
    /// a time, goes after every one that stopped reading. A grace of a
    /// second was tried: for that second the only connection not counted
    /// as work was a clone's, idle between two requests, and it was closed.
    fn working(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > self.waiting.load(Ordering::SeqCst)
            && !self.write_blocked.load(Ordering::Relaxed)
    }

    /// When it last did anything, as an instant comparable across connections.
    fn quiet_since(&self) -> Instant {
        self.started + std::time::Duration::from_millis(self.last_io_ms.load(Ordering::Relaxed))
    }
}

pub(crate) struct Answering(Arc<Activity>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.moved_bytes();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) struct WaitingOnClient(Arc<Activity>);

impl Drop for WaitingOnClient {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Arc<Activity>>>,
    next: AtomicU64,
    bound: usize,
}

/// A connection's place among the open ones, given up on drop.
pub(crate) struct Admitted {
    connections: Arc<Connections>,
    key: u64,
    pub activity: Arc<Activity>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

impl Connections {
    pub fn new(bound: usize) -> Arc<Connections> {
        Arc::new(Connections {
            open: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            bound,
        })
    }

    /// Admits a new connection, closing the quietest one the server is not
    /// working for if the bound is reached; None when it works for all.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= self.bound {
            let quietest = open
                .iter()
                .filter(|(_, a)| !a.working())
                .min_by_key(|(_, a)| a.quiet_since())
                .map(|(k, _)| *k)?;
            if let Some(victim) = open.remove(&quietest) {
                victim.closed.notify_one();
            }
        }
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new());
        open.insert(key, activity.clone());
        Some(Admitted {
            connections: self.clone(),
            key,
            activity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_the_quietest_idle_connection_goes_and_busy_ones_stay() {
        let connections = Connections::new(3);
        let a = connections.admit().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = connections.admit().unwrap();
        let c = connections.admit().unwrap();
        b.activity.moved_bytes();
        c.activity.moved_bytes();
        let _busy = a.activity.answering();
        // `a` is the quietest but busy: `b` or `c`, whichever moved bytes first, goes.
        let d = connections.admit().unwrap();
        assert_eq!(connections.open.lock().unwrap().len(), 3);
        assert!(connections.open.lock().unwrap().contains_key(&a.key));
        let _all_busy = [
            b.activity.answering(),
            c.activity.answering(),
            d.activity.answering(),
        ];
        assert!(connections.open.lock().unwrap().len() == 3);
        assert!(connections.admit().is_none(), "every connection is busy");
        drop(_busy);
        assert!(connections.admit().is_some(), "a is idle again");
        assert!(!connections.open.lock().unwrap().contains_key(&a.key));
        // A request still arriving is a wait on the client, not work.
        let e = connections.admit().unwrap();
        let _waiting = [d.activity.waiting_on_client()];
        assert!(connections.admit().is_some(), "d waits on its client");
        assert!(!connections.open.lock().unwrap().contains_key(&d.key));
        drop(e);
    }

    #[test]
    fn an_answer_its_client_leaves_untaken_makes_room_and_the_quietest_goes_first() {
        let connections = Connections::new(3);
        let (a, b, c) = (
            connections.admit().unwrap(),
            connections.admit().unwrap(),
            connections.admit().unwrap(),
        );
        let _answering = [
            a.activity.answering(),
            b.activity.answering(),
            c.activity.answering(),
        ];
        assert!(
            connections.admit().is_none(),
            "every answer is being written"
        );
        a.activity.write_blocked();
        std::thread::sleep(std::time::Duration::from_millis(5));
        b.activity.moved_bytes();
        b.activity.write_blocked();
        c.activity.write_blocked();
        c.activity.write_unblocked();
        assert!(
            connections.admit().is_some(),
            "a and b wait for their clients"
        );
        let open = connections.open.lock().unwrap();
        assert!(!open.contains_key(&a.key), "a took nothing for longest");
        assert!(
            open.contains_key(&b.key) && open.contains_key(&c.key),
            "b moved bytes later; c's client reads"
        );
    }
}
