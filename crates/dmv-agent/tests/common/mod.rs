//! What the in-process watch loop tests share: a reporter that keeps the
//! loop's words, and a generous wait.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dmv_agent::{Event, Reporter, Waiting};

/// Keeps the words of what the loop did.
pub struct Said(pub Arc<Mutex<Vec<String>>>);

impl Reporter for Said {
    fn words(&self, event: &Event) -> String {
        format!("{event:?}")
    }
    fn waiting_words(&self, waiting: &Waiting) -> String {
        format!("{waiting:?}")
    }
    fn say(&mut self, _event: &Event, words: &str) {
        self.0.lock().unwrap().push(words.to_string());
    }
}

/// Waits up to two minutes for `done` (generous: a loaded machine is slow, not wrong).
pub fn wait_for(what: &str, said: &Mutex<Vec<String>>, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "waited two minutes for {what}; the loop said: {:#?}",
            said.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
