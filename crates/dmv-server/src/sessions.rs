//! The web UI's logins: a session id in the browser's cookie, the token it
//! stands for only here. A stolen cookie then expires and dies at logout, and
//! the token never sits in a browser. Each session carries the secret its
//! forms echo back (a forged form from another site cannot know it).
//!
//! Failed token checks are rationed per client address, so guessing tokens
//! over the network is slow: a burst of [`GUESS_BURST`], then one every
//! [`GUESS_EVERY`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a logged-in browser holds, as the server keeps it.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// The token the session was opened with (its access is looked up anew on every request).
    pub token: String,
    /// The secret the session's forms carry back.
    pub form_secret: String,
    expires: Instant,
}

pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Session>>,
    lifetime: Duration,
}

/// Beyond this many open sessions the oldest are closed (each needed a valid token to open).
const MAX_SESSIONS: usize = 100_000;

impl Sessions {
    pub fn new(lifetime: Duration) -> Sessions {
        Sessions {
            open: Mutex::new(HashMap::new()),
            lifetime,
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session for `token`; returns its id.
    pub fn open(&self, token: &str) -> std::io::Result<String> {
        let id = random_hex()?;
        let session = Session {
            token: token.to_string(),
            form_secret: random_hex()?,
            expires: Instant::now() + self.lifetime,
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= MAX_SESSIONS {
            let now = Instant::now();
            open.retain(|_, s| s.expires > now);
            if open.len() >= MAX_SESSIONS {
                if let Some(oldest) = open
                    .iter()
                    .min_by_key(|(_, s)| s.expires)
                    .map(|(k, _)| k.clone())
                {
                    open.remove(&oldest);
                }
            }
        }
        open.insert(id.clone(), session);
        Ok(id)
    }

    /// The live session named `id`, if any.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        match open.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                open.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn close(&self, id: &str) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// 32 bytes from the operating system's random source, as hex.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Wrong tokens a client address may present at once, and how often it earns another try.
pub(crate) const GUESS_BURST: f64 = 10.0;
pub(crate) const GUESS_EVERY: Duration = Duration::from_secs(1);
/// Addresses remembered; past this, the ones whose tries have refilled are forgotten.
const MAX_ADDRESSES: usize = 65_536;

/// Tries left per client address, refilled over time (a token bucket).
#[derive(Default)]
pub(crate) struct GuessRation {
    tries: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl GuessRation {
    /// Whether `client` may present a token now; when not, how long until it may.
    pub fn check(&self, client: IpAddr) -> Result<(), Duration> {
        let tries = self.tries.lock().unwrap_or_else(|e| e.into_inner());
        match tries.get(&client) {
            Some((left, at)) if refilled(*left, *at) < 1.0 => {
                Err(GUESS_EVERY.mul_f64(1.0 - refilled(*left, *at)))
            }
            _ => Ok(()),
        }
    }

    /// Counts a wrong token presented by `client`.
    pub fn failed(&self, client: IpAddr) {
        let mut tries = self.tries.lock().unwrap_or_else(|e| e.into_inner());
        if tries.len() >= MAX_ADDRESSES {
            tries.retain(|_, (left, at)| refilled(*left, *at) < GUESS_BURST);
        }
        let now = Instant::now();
        let entry = tries.entry(client).or_insert((GUESS_BURST, now));
        *entry = ((refilled(entry.0, entry.1) - 1.0).max(0.0), now);
    }
}

fn refilled(left: f64, at: Instant) -> f64 {
    (left + at.elapsed().as_secs_f64() / GUESS_EVERY.as_secs_f64()).min(GUESS_BURST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_expire_and_close() {
        let sessions = Sessions::new(Duration::from_millis(200));
        let a = sessions.open("tok").unwrap();
        let b = sessions.open("tok").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        let session = sessions.get(&a).unwrap();
        assert_eq!(session.token, "tok");
        assert_ne!(session.form_secret, sessions.get(&b).unwrap().form_secret);
        sessions.close(&a);
        assert!(sessions.get(&a).is_none());
        std::thread::sleep(Duration::from_millis(250));
        assert!(sessions.get(&b).is_none());
    }

    #[test]
    fn wrong_tokens_are_rationed_per_address() {
        let ration = GuessRation::default();
        let (guesser, other): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 0..GUESS_BURST as usize {
            assert!(ration.check(guesser).is_ok());
            ration.failed(guesser);
        }
        let wait = ration.check(guesser).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= GUESS_EVERY);
        assert!(ration.check(other).is_ok());
        std::thread::sleep(GUESS_EVERY);
        assert!(ration.check(guesser).is_ok());
    }
}
