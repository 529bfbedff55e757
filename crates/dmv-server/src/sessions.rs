//! The web UI's logins: a session id in the browser's cookie; the server
//! keeps, under a hash of that id, only a hash of the token it stands for
//! and when it ends. A stolen cookie then expires and dies at logout, and
//! the token never sits in a browser nor in the session's record.
//!
//! The records live where the servers of a repository all see them
//! ([`SessionPlace`]): a folder of the served repository (`.dmv/web-logins`)
//! or its bucket, so a login survives a restart and works on every server
//! of a bucket (a logout on one ends it on all). A cookie reads
//! `<ends>.<random>`: the record's name carries when it ends, so expired
//! ones are swept from a listing, without reading them.
//!
//! Each session's forms carry a secret derived from its id (a forged form
//! from another site cannot know it; a page that shows it gives away
//! nothing of the id).
//!
//! Failed token checks are rationed per client address, so guessing tokens
//! over the network is slow: a burst of [`GUESS_BURST`], then one every
//! [`GUESS_EVERY`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::server_config::{RepoPlace, ServerConfig};

/// What a logged-in browser holds, as the server finds it.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// The hash of the token the session was opened with (its access is
    /// looked up anew on every request).
    pub token_hash: blake3::Hash,
    /// The secret the session's forms carry back.
    pub form_secret: String,
}

/// Where the session records are kept.
pub(crate) enum SessionPlace {
    /// This process's memory (no repository to keep them in).
    Memory(Mutex<HashMap<String, Vec<u8>>>),
    /// One file per session in this folder.
    Folder(PathBuf),
    /// One shared record per session in a bucket.
    Bucket(Box<dmv_sync::SharedRecords>),
}

pub(crate) struct Sessions {
    place: SessionPlace,
    lifetime: Duration,
    /// When this process last swept the ended sessions away.
    swept: Mutex<Option<Instant>>,
}

/// Beyond this many open sessions the oldest are closed (each needed a valid token to open).
pub(crate) const MAX_SESSIONS: usize = 100_000;
/// Ended sessions are swept at most this often by one process.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// The records' kind in a bucket.
const KIND: &str = "logins";
/// A record: this line, the token's hash in hex, and the end in Unix seconds.
const RECORD_HEADER: &str = "dmv-login 1";
/// A record is about 90 bytes; more is not one.
const MAX_RECORD: usize = 512;

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A record's bytes.
fn encode(token_hash: &blake3::Hash, ends: u64) -> Vec<u8> {
    format!("{RECORD_HEADER}\n{}\n{ends}\n", token_hash.to_hex()).into_bytes()
}

/// A record's token hash and end, if it is one.
fn decode(bytes: &[u8]) -> Option<(blake3::Hash, u64)> {
    if bytes.len() > MAX_RECORD {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.strip_suffix('\n')?.split('\n');
    if lines.next()? != RECORD_HEADER {
        return None;
    }
    let hash = blake3::Hash::from_hex(lines.next()?).ok()?;
    let ends = lines.next()?.parse().ok()?;
    lines.next().is_none().then_some((hash, ends))
}

/// The end a cookie's id names, if it is of our shape: `<ends>.<64 hex>`.
fn ends_of(id: &str) -> Option<u64> {
    let (ends, random) = id.split_once('.')?;
    let well_formed = ends.len() <= 20
        && ends.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 64
        && random.bytes().all(|b| b.is_ascii_hexdigit());
    well_formed.then(|| ends.parse().ok()).flatten()
}

/// The record's name of the session `id`: its end, then a hash of the
/// whole id (so the id itself is stored nowhere, and a changed end names
/// no record).
fn record_name(id: &str, ends: u64) -> String {
    format!("{ends}-{}", blake3::hash(id.as_bytes()).to_hex())
}

/// The end a record's name carries.
fn ends_of_name(name: &str) -> Option<u64> {
    name.split_once('-')?.0.parse().ok()
}

impl SessionPlace {
    fn put(&self, name: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        match self {
            SessionPlace::Memory(open) => {
                lock(open).insert(name.to_string(), bytes);
                Ok(())
            }
            SessionPlace::Folder(dir) => {
                std::fs::create_dir_all(dir)?;
                let tmp = dir.join(format!(".{name}.tmp"));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, dir.join(name))
            }
            SessionPlace::Bucket(records) => {
                blocking(|| records.put(KIND, name, bytes)).map_err(std::io::Error::other)
            }
        }
    }

    fn get(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        match self {
            SessionPlace::Memory(open) => Ok(lock(open).get(name).cloned()),
            SessionPlace::Folder(dir) => {
                use std::io::Read;
                let file = match std::fs::File::open(dir.join(name)) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e),
                };
                let mut bytes = Vec::new();
                file.take(MAX_RECORD as u64 + 1).read_to_end(&mut bytes)?;
                Ok(Some(bytes))
            }
            SessionPlace::Bucket(records) => {
                blocking(|| records.get(KIND, name)).map_err(std::io::Error::other)
            }
        }
    }

    fn delete(&self, name: &str) -> std::io::Result<()> {
        match self {
            SessionPlace::Memory(open) => {
                lock(open).remove(name);
                Ok(())
            }
            SessionPlace::Folder(dir) => match std::fs::remove_file(dir.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            SessionPlace::Bucket(records) => {
                blocking(|| records.delete(KIND, name)).map_err(std::io::Error::other)
            }
        }
    }

    fn names(&self) -> std::io::Result<Vec<String>> {
        match self {
            SessionPlace::Memory(open) => Ok(lock(open).keys().cloned().collect()),
            SessionPlace::Folder(dir) => match std::fs::read_dir(dir) {
                Ok(entries) => Ok(entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| ends_of_name(n).is_some())
                    .collect()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(e) => Err(e),
            },
            SessionPlace::Bucket(records) => {
                blocking(|| records.names(KIND)).map_err(std::io::Error::other)
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs a bucket request from wherever a session is looked up: a
/// handler on the server's runtime may block its thread for it (the
/// bucket's client runs on a runtime of its own).
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Where the logins of a server of `config` are kept: in the repository
/// its `sessions` names, else in the first bucket by name, else in the first
/// directory (under `.dmv/web-logins`), else in memory. Opened before the
/// server's runtime starts (a bucket's client has a runtime of its own).
pub(crate) fn place_for(config: &ServerConfig) -> Result<SessionPlace, String> {
    let named = config.sessions.as_ref().and_then(|n| config.repos.get(n));
    let chosen = named
        .or_else(|| config.repos.values().find(|p| p.bucket().is_some()))
        .or_else(|| config.repos.values().find(|p| p.dir().is_some()));
    let in_repo = |why: String| format!("in {}: {why}", describe(chosen));
    if let Some((url, options)) = chosen.and_then(RepoPlace::bucket) {
        let records =
            dmv_sync::SharedRecords::open(url, &options).map_err(|e| in_repo(e.to_string()))?;
        return Ok(SessionPlace::Bucket(Box::new(records)));
    }
    if let Some(dir) = chosen.and_then(RepoPlace::dir) {
        // A folder that is no repository yet (its first push is to come)
        // gets no `.dmv` of ours: the logins stay in memory, as said.
        match dmv_repo::Repository::open(dir) {
            Ok(repo) => return Ok(SessionPlace::Folder(repo.dmv.join("web-logins"))),
            Err(e) => eprintln!(
                "warning: web logins are kept in memory (a restart ends them): {}",
                in_repo(e.to_string())
            ),
        }
    }
    Ok(SessionPlace::Memory(Mutex::default()))
}

fn describe(place: Option<&RepoPlace>) -> String {
    match place {
        Some(RepoPlace::Dir(dir)) => dir.display().to_string(),
        Some(RepoPlace::Bucket { url, .. }) => url.clone(),
        _ => "memory".into(),
    }
}

impl Sessions {
    pub fn new(place: SessionPlace, lifetime: Duration) -> Sessions {
        Sessions {
            place,
            lifetime,
            swept: Mutex::new(None),
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session for the token whose hash is `token_hash`; returns its id.
    pub fn open(&self, token_hash: &blake3::Hash) -> std::io::Result<String> {
        self.sweep()?;
        let ends = now_secs() + self.lifetime.as_secs().max(1);
        let id = format!("{ends}.{}", random_hex()?);
        self.place
            .put(&record_name(&id, ends), encode(token_hash, ends))?;
        Ok(id)
    }

    /// The live session named `id`, if any. A store that does not answer
    /// is no session (the browser is asked to log in again).
    pub fn get(&self, id: &str) -> Option<Session> {
        let ends = ends_of(id)?;
        let name = record_name(id, ends);
        if ends <= now_secs() {
            let _ = self.place.delete(&name);
            return None;
        }
        let (token_hash, stored_end) = decode(&self.place.get(&name).ok()??)?;
        (stored_end == ends).then(|| Session {
            token_hash,
            form_secret: form_secret(id),
        })
    }

    pub fn close(&self, id: &str) {
        if let Some(ends) = ends_of(id) {
            let _ = self.place.delete(&record_name(id, ends));
        }
    }

    /// Removes the ended sessions, at most once per [`SWEEP_EVERY`] (or
    /// when the memory holds [`MAX_SESSIONS`]); past [`MAX_SESSIONS`] open,
    /// the soonest to end go too.
    fn sweep(&self) -> std::io::Result<()> {
        let full = matches!(&self.place, SessionPlace::Memory(m) if lock(m).len() >= MAX_SESSIONS);
        {
            let mut swept = lock(&self.swept);
            if swept.is_some_and(|at| at.elapsed() < SWEEP_EVERY) && !full {
                return Ok(());
            }
            *swept = Some(Instant::now());
        }
        let now = now_secs();
        let mut live = Vec::new();
        for name in self.place.names()? {
            match ends_of_name(&name) {
                Some(ends) if ends > now => live.push((ends, name)),
                _ => self.place.delete(&name)?,
            }
        }
        if live.len() >= MAX_SESSIONS {
            live.sort();
            for (_, name) in &live[..=live.len() - MAX_SESSIONS] {
                self.place.delete(name)?;
            }
        }
        Ok(())
    }
}

/// The secret the forms of session `id` carry.
fn form_secret(id: &str) -> String {
    blake3::derive_key("dmv web form secret 2026-12", id.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

    fn sessions_in(place: SessionPlace, lifetime: Duration) {
        let sessions = Sessions::new(place, lifetime);
        let tok = blake3::hash(b"tok");
        let a = sessions.open(&tok).unwrap();
        let b = sessions.open(&tok).unwrap();
        assert_ne!(a, b);
        assert!(ends_of(&a).is_some(), "{a}");
        let session = sessions.get(&a).unwrap();
        assert_eq!(session.token_hash, tok);
        assert_ne!(session.form_secret, sessions.get(&b).unwrap().form_secret);
        // A cookie whose end was moved names no record.
        let (ends, random) = a.split_once('.').unwrap();
        let later = format!("{}.{random}", ends.parse::<u64>().unwrap() + 3600);
        assert!(sessions.get(&later).is_none());
        for junk in [
            "",
            "x",
            "1.2",
            "99999999999999999999999.ab",
            &"9".repeat(300),
        ] {
            assert!(sessions.get(junk).is_none(), "{junk:?}");
        }
        sessions.close(&a);
        assert!(sessions.get(&a).is_none());
        std::thread::sleep(Duration::from_millis(2100));
        assert!(sessions.get(&b).is_none());
    }

    #[test]
    fn sessions_expire_and_close() {
        sessions_in(
            SessionPlace::Memory(Mutex::default()),
            Duration::from_secs(1),
        );
        let dir = tempfile::tempdir().unwrap();
        sessions_in(
            SessionPlace::Folder(dir.path().join("logins")),
            Duration::from_secs(1),
        );
        // An ended session nobody asked for again is swept at the next login.
        std::fs::write(
            dir.path().join("logins/100-ab"),
            encode(&blake3::hash(b"t"), 100),
        )
        .unwrap();
        let sessions = Sessions::new(
            SessionPlace::Folder(dir.path().join("logins")),
            Duration::from_secs(1),
        );
        sessions.open(&blake3::hash(b"tok")).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path().join("logins"))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn a_record_has_golden_bytes() {
        let hash = blake3::hash(b"tok");
        let bytes = encode(&hash, 1_800_000_000);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!("dmv-login 1\n{}\n1800000000\n", hash.to_hex())
        );
        assert_eq!(decode(&bytes), Some((hash, 1_800_000_000)));
        assert_eq!(
            record_name(&format!("1800000000.{}", "ab".repeat(32)), 1_800_000_000),
            format!(
                "1800000000-{}",
                blake3::hash(format!("1800000000.{}", "ab".repeat(32)).as_bytes()).to_hex()
            )
        );
        assert_eq!(form_secret("1.x").len(), 64);
    }

    proptest::proptest! {
        #[test]
        fn records_decode_any_bytes_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..700)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn ids_are_judged_without_panicking(id in ".{0,100}") {
            let _ = ends_of(&id);
        }
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
