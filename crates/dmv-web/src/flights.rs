//! Expensive answers computed once per key at a time, kept, and bounded
//! together. 300 searches of one large tree at once each listed the whole
//! tree (5.6 GB); a file page described its MP4 again on every visit. With
//! [`Flights`], callers asking for a key being computed wait for that
//! result instead of computing it again, and the last results are kept;
//! [`Budget`] bounds what runs at once, whatever many keys are asked for.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Listings and descriptions a page may ask for that read much (a whole
/// tree's paths, a film's index) running at once, all repositories
/// together: as many as this machine kind has cores.
pub(crate) static EXPENSIVE: Budget = Budget::new(2);

/// A counted budget shared by the work that takes from it (decode memory
/// in bytes, expensive listings in number): a taker waits until its share
/// fits beside what runs.
pub(crate) struct Budget {
    held: Mutex<u64>,
    freed: Condvar,
    total: u64,
}

/// A share of a [`Budget`], given back on drop.
pub(crate) struct Share<'b> {
    budget: &'b Budget,
    amount: u64,
}

impl Budget {
    pub(crate) const fn new(total: u64) -> Budget {
        Budget {
            held: Mutex::new(0),
            freed: Condvar::new(),
            total,
        }
    }

    /// Waits until `amount` (at most the whole budget) fits, and takes it.
    pub(crate) fn take(&self, amount: u64) -> Share<'_> {
        let amount = amount.min(self.total);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held + amount > self.total {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held += amount;
        Share {
            budget: self,
            amount,
        }
    }

    /// What is taken now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> u64 {
        *self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        *self.budget.held.lock().unwrap_or_else(|e| e.into_inner()) -= self.amount;
        self.budget.freed.notify_all();
    }
}

/// Results by key: at most one computation per key at a time, the last
/// `kept` results remembered.
pub(crate) struct Flights<K, V> {
    state: Mutex<FlightState<K, V>>,
    kept: usize,
}

struct FlightState<K, V> {
    running: HashMap<K, Arc<OnceLock<V>>>,
    done: VecDeque<(K, V)>,
}

impl<K: Eq + Hash + Clone, V: Clone> Flights<K, V> {
    pub(crate) fn new(kept: usize) -> Flights<K, V> {
        Flights {
            state: Mutex::new(FlightState {
                running: HashMap::new(),
                done: VecDeque::new(),
            }),
            kept,
        }
    }

    /// The result for `key`: kept, being made by another caller (waited
    /// for), or made now by `make`. Errors are results too: a key that
    /// fails is not retried by everyone waiting for it.
    pub(crate) fn get(&self, key: &K, make: impl FnOnce() -> V) -> V {
        let cell = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = state.done.iter().position(|(k, _)| k == key) {
                let hit = state.done.remove(i).expect("found");
                state.done.push_front(hit.clone());
                return hit.1;
            }
            state
                .running
                .entry(key.clone())
                .or_insert_with(|| Arc::new(OnceLock::new()))
                .clone()
        };
        let value = cell.get_or_init(make).clone();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state
            .running
            .get(key)
            .is_some_and(|c| Arc::ptr_eq(c, &cell))
        {
            state.running.remove(key);
            state.done.retain(|(k, _)| k != key);
            state.done.push_front((key.clone(), value.clone()));
            let kept = self.kept;
            state.done.truncate(kept);
        }
        value
    }

    /// Forgets the kept result for `key`: the next [`Flights::get`] makes it again.
    pub(crate) fn forget(&self, key: &K) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.done.retain(|(k, _)| k != key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_key_is_computed_twice_at_once_and_the_budget_bounds_all() {
        let flights: Flights<usize, Arc<Vec<u8>>> = Flights::new(2);
        let running: [AtomicUsize; 4] = Default::default();
        let (budget, most_at_once, most_per_key) =
            (Budget::new(2), AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for i in 0..64 {
                let (flights, running, budget, most_at_once, most_per_key) =
                    (&flights, &running, &budget, &most_at_once, &most_per_key);
                s.spawn(move || {
                    let key = i % 4;
                    let value = flights.get(&key, || {
                        let _share = budget.take(1);
                        most_at_once.fetch_max(budget.held() as usize, Ordering::SeqCst);
                        most_per_key.fetch_max(
                            running[key].fetch_add(1, Ordering::SeqCst) + 1,
                            Ordering::SeqCst,
                        );
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running[key].fetch_sub(1, Ordering::SeqCst);
                        Arc::new(vec![key as u8; 1 << 20])
                    });
                    assert_eq!(value[0], key as u8);
                });
            }
        });
        assert_eq!(
            most_per_key.load(Ordering::SeqCst),
            1,
            "one computation per key at a time"
        );
        assert!(
            most_at_once.load(Ordering::SeqCst) <= 2,
            "the budget bounds the work at once"
        );
        assert_eq!(budget.held(), 0);
        flights.get(&7, || Arc::new(Vec::new()));
        flights.get(&7, || unreachable!("kept"));
        flights.forget(&7);
        assert_eq!(flights.get(&7, || Arc::new(vec![9])).as_slice(), [9]);
    }
}
