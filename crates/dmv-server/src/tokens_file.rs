//! The tokens file: the server's login tokens kept apart from its
//! configuration, managed by a command rather than by editing TOML, and
//! holding no secret: each entry is an id, a BLAKE3 hash of the token,
//! what it allows, whose it is (a user for locks, a name and an email for
//! what they author) and when it was made. A token is shown once, when it
//! is made; the server hashes what a client presents and compares hashes
//! in constant time.
//!
//! Everything read from the file is bounded ([`MAX_FILE_BYTES`],
//! [`MAX_TOKENS`], [`MAX_FIELD_BYTES`]): a file past them is refused
//! whole, with one line saying where. A running server sees the file's
//! changes without a restart ([`WatchedTokens`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use dmv_sync::{SyncError, SyncResult};

/// What a token allows, each level all the one before it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenAccess {
    /// Fetching and cloning.
    Read,
    /// Pushing and locking too.
    Write,
    /// Writes, and may break other people's locks.
    Admin,
}

impl TokenAccess {
    /// `read`, `write` or `admin`, as the files spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAccess::Read => "read",
            TokenAccess::Write => "write",
            TokenAccess::Admin => "admin",
        }
    }

    /// The access a word names (`read`, `write`, `admin`).
    pub fn parse(word: &str) -> Option<TokenAccess> {
        match word {
            "read" => Some(TokenAccess::Read),
            "write" => Some(TokenAccess::Write),
            "admin" => Some(TokenAccess::Admin),
            _ => None,
        }
    }
}

/// A tokens file larger than this is refused unread: 10,000 entries of
/// the longest fields fit in it.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Entries in one tokens file.
pub const MAX_TOKENS: usize = 10_000;
/// Bytes of a user, a name or an email.
pub const MAX_FIELD_BYTES: usize = 256;
/// Bytes of an id.
pub const MAX_ID_BYTES: usize = 32;
/// Groups one token is in, at most.
pub const MAX_GROUPS_PER_TOKEN: usize = 64;

/// One token of the file: everything but its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileToken {
    /// Short, unique in the file: how a person names it (to revoke it).
    pub id: String,
    /// BLAKE3 of the token's text.
    pub hash: blake3::Hash,
    /// What it allows.
    pub access: TokenAccess,
    /// Whose it is: the name locks are held under.
    pub user: String,
    /// The person's full name (authors of web uploads).
    pub name: Option<String>,
    /// The person's email.
    pub email: Option<String>,
    /// The paths the holder may change (None: every path), checked by
    /// [`dmv_repo::WriteGrant::parse`] when the file is read.
    pub write: Option<Vec<String>>,
    /// The server's `[groups]` the holder is in (their grants unite with
    /// `write`): checked against the server's configuration at its start.
    pub groups: Vec<String>,
    /// When it was made, seconds since 1970 (UTC).
    pub created: u64,
}

/// A new token's holder and rights.
#[derive(Clone, Debug)]
pub struct NewToken {
    /// The user (for locks).
    pub user: String,
    /// Full name.
    pub name: Option<String>,
    /// Email.
    pub email: Option<String>,
    /// What it allows.
    pub access: TokenAccess,
    /// The paths it may change (None: every path).
    pub write: Option<Vec<String>>,
    /// The server's groups it is in.
    pub groups: Vec<String>,
}

/// The tokens of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokensFile {
    /// In the file's order (oldest first, as `add` appends).
    pub tokens: Vec<FileToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    token: Vec<RawToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    id: String,
    hash: String,
    access: TokenAccess,
    user: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    write: Option<Vec<String>>,
    #[serde(default)]
    groups: Vec<String>,
    created: u64,
}

/// The first line of every file written here.
const HEADER: &str =
    "# Login tokens of a DMV server: only a BLAKE3 hash of each token is kept (docs/security.md).\n";

fn file_error(path: &Path, detail: impl Into<String>) -> SyncError {
    SyncError::ServerConfig {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// Checks a user, name or email: present (when `required`), within
/// [`MAX_FIELD_BYTES`], without control characters (they are printed).
fn check_field(what: &str, value: &str) -> Result<(), String> {
    if value.len() > MAX_FIELD_BYTES {
        return Err(format!(
            "{what} is {} bytes, past the {MAX_FIELD_BYTES} allowed",
            value.len()
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("{what} holds a control character"));
    }
    Ok(())
}

fn check_new(t: &NewToken) -> Result<(), String> {
    if t.user.trim().is_empty() {
        return Err("a token needs a user".into());
    }
    check_field("the user", &t.user)?;
    check_field("the name", t.name.as_deref().unwrap_or(""))?;
    check_field("the email", t.email.as_deref().unwrap_or(""))?;
    if t.groups.len() > MAX_GROUPS_PER_TOKEN {
        return Err(format!(
            "in {} groups, past the {} allowed",
            t.groups.len(),
            MAX_GROUPS_PER_TOKEN
        ));
    }
    for group in &t.groups {
        if group.trim().is_empty() {
            return Err("a group's name is empty".into());
        }
        check_field("a group's name", group)?;
    }
    match &t.write {
        Some(patterns) => dmv_repo::WriteGrant::parse(patterns).map(drop),
        None => Ok(()),
    }
}

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Line `n` (from 1) of `text` at byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

impl TokensFile {
    /// The per-user file: `$XDG_CONFIG_HOME/dmv/server-tokens.toml`, else
    /// `~/.config/dmv/server-tokens.toml`; None without a home.
    pub fn default_path() -> Option<PathBuf> {
        dmv_repo::global_path().map(|p| p.with_file_name("server-tokens.toml"))
    }

    /// Parses a file's text, holding it to the bounds; a refusal is one
    /// line saying where.
    pub fn parse(text: &str) -> Result<TokensFile, String> {
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(format!("larger than the {MAX_FILE_BYTES} bytes allowed"));
        }
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let message = e.message().lines().next().unwrap_or("not TOML").to_string();
            match e.span() {
                Some(span) => format!("line {}: {message}", line_of(text, span.start)),
                None => message,
            }
        })?;
        if raw.token.len() > MAX_TOKENS {
            return Err(format!(
                "{} tokens, past the {MAX_TOKENS} allowed",
                raw.token.len()
            ));
        }
        let mut tokens: Vec<FileToken> = Vec::with_capacity(raw.token.len());
        for (n, t) in raw.token.into_iter().enumerate() {
            let at = |why: String| format!("token {} ({}): {why}", n + 1, t.id);
            if t.id.is_empty()
                || t.id.len() > MAX_ID_BYTES
                || !t.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                return Err(format!(
                    "token {}: an id is 1 to {MAX_ID_BYTES} letters, digits or dashes",
                    n + 1
                ));
            }
            if tokens.iter().any(|o| o.id == t.id) {
                return Err(at("a second token with this id".into()));
            }
            if t.hash.len() != 64 || !t.hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(at("its hash is not 64 hexadecimal digits".into()));
            }
            let hash = blake3::Hash::from_hex(&t.hash)
                .map_err(|_| at("its hash is not 64 hexadecimal digits".into()))?;
            check_new(&NewToken {
                user: t.user.clone(),
                name: t.name.clone(),
                email: t.email.clone(),
                access: t.access,
                write: t.write.clone(),
                groups: t.groups.clone(),
            })
            .map_err(at)?;
            tokens.push(FileToken {
                id: t.id,
                hash,
                access: t.access,
                user: t.user,
                name: t.name.filter(|s| !s.is_empty()),
                email: t.email.filter(|s| !s.is_empty()),
                write: t.write,
                groups: t.groups,
                created: t.created,
            });
        }
        Ok(TokensFile { tokens })
    }

    /// Reads the file at `path`; none there is an empty file. Anything
    /// else that keeps it from being read whole and valid is an error of
    /// one line naming the file.
    pub fn read(path: &Path) -> SyncResult<TokensFile> {
        use std::io::Read;
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TokensFile::default()),
            Err(e) => return Err(file_error(path, e.to_string())),
        };
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| file_error(path, e.to_string()))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(file_error(
                path,
                format!("larger than the {MAX_FILE_BYTES} bytes a tokens file may hold"),
            ));
        }
        let text = String::from_utf8(bytes).map_err(|_| file_error(path, "not UTF-8 text"))?;
        TokensFile::parse(&text).map_err(|why| file_error(path, why))
    }

    /// The file's text, as [`TokensFile::parse`] reads it back.
    pub fn to_text(&self) -> String {
        let mut out = String::from(HEADER);
        for t in &self.tokens {
            out.push_str("\n[[token]]\n");
            out.push_str(&format!("id = {}\n", quoted(&t.id)));
            out.push_str(&format!("hash = \"{}\"\n", t.hash.to_hex()));
            out.push_str(&format!("access = \"{}\"\n", t.access.as_str()));
            out.push_str(&format!("user = {}\n", quoted(&t.user)));
            if let Some(name) = &t.name {
                out.push_str(&format!("name = {}\n", quoted(name)));
            }
            if let Some(email) = &t.email {
                out.push_str(&format!("email = {}\n", quoted(email)));
            }
            if let Some(write) = &t.write {
                let list: Vec<String> = write.iter().map(|p| quoted(p)).collect();
                out.push_str(&format!("write = [{}]\n", list.join(", ")));
            }
            if !t.groups.is_empty() {
                let list: Vec<String> = t.groups.iter().map(|g| quoted(g)).collect();
                out.push_str(&format!("groups = [{}]\n", list.join(", ")));
            }
            out.push_str(&format!("created = {}\n", t.created));
        }
        out
    }

    /// Whether some token allows everything.
    pub fn has_admin(&self) -> bool {
        self.tokens.iter().any(|t| t.access == TokenAccess::Admin)
    }

    /// The token whose hash is the presented token's. Every entry is
    /// compared, each in constant time (`blake3::Hash`'s equality), so
    /// timing says nothing of which or how much matched.
    pub fn lookup(&self, presented: &str) -> Option<&FileToken> {
        self.lookup_hash(&blake3::hash(presented.as_bytes()))
    }

    /// The token whose hash is `hash` (a login keeps only the hash).
    pub fn lookup_hash(&self, hash: &blake3::Hash) -> Option<&FileToken> {
        let mut found = None;
        for t in &self.tokens {
            if t.hash == *hash {
                found = Some(t);
            }
        }
        found
    }

    /// Adds a token for `new` to the file at `path` (made, 0600, with its
    /// folder, when there is none), under the file's lock so that two
    /// writers both keep their change. Returns the entry and the token
    /// itself, which is kept nowhere: it is shown once.
    pub fn add(path: &Path, new: &NewToken) -> SyncResult<(FileToken, String)> {
        check_new(new).map_err(|why| file_error(path, why))?;
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret)
            .map_err(|e| SyncError::local("cannot make a random token", e.into()))?;
        let secret: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let made = Self::change(path, |file| {
            if file.tokens.len() >= MAX_TOKENS {
                return Err(format!("it already holds the {MAX_TOKENS} tokens allowed"));
            }
            let id = loop {
                let mut raw = [0u8; 4];
                getrandom::getrandom(&mut raw).map_err(|e| e.to_string())?;
                let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
                if !file.tokens.iter().any(|t| t.id == id) {
                    break id;
                }
            };
            let token = FileToken {
                id,
                hash: blake3::hash(secret.as_bytes()),
                access: new.access,
                user: new.user.clone(),
                name: new.name.clone().filter(|s| !s.is_empty()),
                email: new.email.clone().filter(|s| !s.is_empty()),
                write: new.write.clone(),
                groups: new.groups.clone(),
                created,
            };
            file.tokens.push(token.clone());
            Ok(token)
        })?;
        Ok((made, secret))
    }

    /// Removes the token `id` from the file at `path`; None when there is
    /// no such token (nothing is written then).
    pub fn revoke(path: &Path, id: &str) -> SyncResult<Option<FileToken>> {
        Self::change(path, |file| {
            Ok(file
                .tokens
                .iter()
                .position(|t| t.id == id)
                .map(|at| file.tokens.remove(at)))
        })
    }

    /// Reads, changes and writes the file whole (atomically, 0600) under
    /// `FILE.lock`.
    fn change<T>(
        path: &Path,
        edit: impl FnOnce(&mut TokensFile) -> Result<T, String>,
    ) -> SyncResult<T> {
        // `tokens.toml` is in the current folder (whose parent is "").
        let path = &std::path::absolute(path).map_err(|e| file_error(path, e.to_string()))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| file_error(dir, e.to_string()))?;
        }
        let mut lock_name = path.file_name().unwrap_or_default().to_os_string();
        lock_name.push(".lock");
        let lock_path = path.with_file_name(lock_name);
        let lock = {
            use dmv_os::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&lock_path)
                .map_err(|e| file_error(&lock_path, e.to_string()))?
        };
        dmv_os::lock(&lock, dmv_os::LockKind::Exclusive)
            .map_err(|e| file_error(&lock_path, e.to_string()))?;
        let mut file = TokensFile::read(path)?;
        let before = file.clone();
        let answer = edit(&mut file).map_err(|why| file_error(path, why))?;
        if file != before {
            dmv_repo::write_atomic_private(path, file.to_text().as_bytes())?;
        }
        Ok(answer)
    }
}

/// What identifies a version of the file: its size, times and inode. Each
/// write replaces the file by a rename, so a new version has a new inode
/// as well as new times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
    changed: i64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let (inode, changed) = {
        use std::os::unix::fs::MetadataExt;
        (meta.ino(), meta.ctime() * 1_000_000_000 + meta.ctime_nsec())
    };
    #[cfg(not(unix))]
    let (inode, changed) = (0, 0);
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
        changed,
    })
}

/// A tokens file as a running server sees it: read again whenever it
/// changed. The file is looked at (one `stat`, a microsecond or so) at each
/// lookup and read only when its size, times or inode moved: that costs
/// less than anything else a request does, and a token added or revoked
/// counts from the next request on, where a check at most once a second
/// would let a revoked token through for up to a second (and make a script
/// that adds a token and pushes at once fail now and then).
#[derive(Debug)]
pub(crate) struct WatchedTokens {
    path: PathBuf,
    seen: Mutex<Option<(Option<Stamp>, Arc<TokensFile>)>>,
}

impl WatchedTokens {
    pub fn new(path: PathBuf) -> WatchedTokens {
        WatchedTokens {
            path,
            seen: Mutex::new(None),
        }
    }

    /// The file's tokens now. A file that became unreadable or invalid
    /// gives no tokens (said once on stderr) until it is mended: a revoked
    /// token must not stay valid because the file broke.
    pub fn current(&self) -> Arc<TokensFile> {
        let now = stamp(&self.path);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, tokens)) = seen.as_ref() {
            if *at == now {
                return tokens.clone();
            }
        }
        let tokens = Arc::new(match TokensFile::read(&self.path) {
            Ok(file) => file,
            Err(e) => {
                eprintln!("dmv serve: {e}; its tokens are refused until it is mended");
                TokensFile::default()
            }
        });
        *seen = Some((now, tokens.clone()));
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TokensFile {
        TokensFile {
            tokens: vec![
                FileToken {
                    id: "0a1b2c3d".into(),
                    hash: blake3::hash(b"secret one"),
                    access: TokenAccess::Admin,
                    user: "Ann Example".into(),
                    name: Some("Ann Example".into()),
                    email: Some("ann@example.com".into()),
                    write: None,
                    groups: Vec::new(),
                    created: 1_700_000_000,
                },
                FileToken {
                    id: "ffee0011".into(),
                    hash: blake3::hash(b"secret two"),
                    access: TokenAccess::Read,
                    user: "bob \"the\" \\ builder".into(),
                    name: None,
                    email: None,
                    write: None,
                    groups: Vec::new(),
                    created: 1_700_000_100,
                },
                FileToken {
                    id: "a7751500".into(),
                    hash: blake3::hash(b"secret three"),
                    access: TokenAccess::Write,
                    user: "artist".into(),
                    name: None,
                    email: None,
                    write: Some(vec!["art/**".into(), "audio/\"x\"/*.wav".into()]),
                    groups: vec!["artists".into()],
                    created: 1_700_000_200,
                },
            ],
        }
    }

    /// The bytes `add` writes are a format others read (and back up):
    /// pinned.
    #[test]
    fn the_file_format_is_pinned() {
        let text = sample().to_text();
        // The hashes are BLAKE3 of "secret one", "secret two" and "secret three".
        let golden = "\
# Login tokens of a DMV server: only a BLAKE3 hash of each token is kept (docs/security.md).

[[token]]
id = \"0a1b2c3d\"
hash = \"91758430cef75c14cceb8fcb7fb217693758476197f89a4fcc53a1142912eeb1\"
access = \"admin\"
user = \"Ann Example\"
name = \"Ann Example\"
email = \"ann@example.com\"
created = 1700000000

[[token]]
id = \"ffee0011\"
hash = \"4785efbcfcacc3d6cbdba375a43747fe074656b9ffb278e1bd8ed91557925f12\"
access = \"read\"
user = \"bob \\\"the\\\" \\\\ builder\"
created = 1700000100

[[token]]
id = \"a7751500\"
hash = \"ae7e27171a2bfb8007d20821dc33d85eb004fc42541bbce949782e6a9baba4e2\"
access = \"write\"
user = \"artist\"
write = [\"art/**\", \"audio/\\\"x\\\"/*.wav\"]
groups = [\"artists\"]
created = 1700000200
";
        assert_eq!(text, golden);
        assert_eq!(TokensFile::parse(&text).unwrap(), sample());
    }

    #[test]
    fn lookup_finds_by_hash_and_nothing_else() {
        let file = sample();
        assert_eq!(file.lookup("secret two").unwrap().id, "ffee0011");
        assert!(file.lookup("secret").is_none());
        assert!(file.lookup("").is_none());
        assert!(file.lookup(&blake3::hash(b"secret one").to_hex()).is_none());
        assert!(file.has_admin());
    }

    #[test]
    fn add_and_revoke_keep_the_file_private_and_the_secret_out_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tokens.toml");
        let (made, secret) = TokensFile::add(
            &path,
            &NewToken {
                user: "ann".into(),
                name: Some("Ann Example".into()),
                email: None,
                access: TokenAccess::Write,
                write: None,
                groups: Vec::new(),
            },
        )
        .unwrap();
        assert_eq!(secret.len(), 64);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&secret));
        assert!(text.contains(&*blake3::hash(secret.as_bytes()).to_hex()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let file = TokensFile::read(&path).unwrap();
        assert_eq!(file.lookup(&secret), Some(&made));
        let watched = WatchedTokens::new(path.clone());
        assert_eq!(watched.current().tokens.len(), 1);
        assert_eq!(
            TokensFile::revoke(&path, &made.id).unwrap().map(|t| t.id),
            Some(made.id.clone())
        );
        assert_eq!(TokensFile::revoke(&path, &made.id).unwrap(), None);
        assert!(watched.current().tokens.is_empty());
        assert!(TokensFile::read(&dir.path().join("none"))
            .unwrap()
            .tokens
            .is_empty());
    }

    #[test]
    fn files_past_the_bounds_or_broken_are_refused_in_one_line() {
        let entry = |id: &str, user: &str| {
            format!(
                "[[token]]\nid = \"{id}\"\nhash = \"{}\"\naccess = \"read\"\nuser = \"{user}\"\ncreated = 1\n",
                blake3::hash(id.as_bytes()).to_hex()
            )
        };
        let refused = |text: &str, says: &str| {
            let why = TokensFile::parse(text).unwrap_err();
            assert!(why.contains(says), "{why:?} should say {says:?}");
            assert!(!why.contains('\n'), "{why:?}");
        };
        refused(
            &entry("a", &"u".repeat(MAX_FIELD_BYTES + 1)),
            "past the 256",
        );
        assert!(TokensFile::parse(&entry("a", &"u".repeat(MAX_FIELD_BYTES))).is_ok());
        refused(&entry(&"i".repeat(MAX_ID_BYTES + 1), "u"), "an id is");
        refused(&entry("a b", "u"), "an id is");
        refused(&(entry("a", "u") + &entry("a", "v")), "a second token");
        refused(&entry("a", "u\\u0007"), "control character");
        refused(&entry("a", ""), "needs a user");
        refused(
            &entry("a", "u").replace("access = \"read\"", "access = \"root\""),
            "line 4",
        );
        refused(
            &entry("a", "u").replace("created = 1", "created = 1\nsecret = \"x\""),
            "unknown field",
        );
        refused(
            &entry("a", "u").replace("hash = \"", "hash = \"zz"),
            "64 hexadecimal",
        );
        refused("[[token]\n", "line 1");
        let many: String = (0..=MAX_TOKENS)
            .map(|n| entry(&n.to_string(), "u"))
            .collect();
        refused(&many, "past the 10000");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = TokensFile::read(&big).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        std::fs::write(&big, [0xff, 0xfe]).unwrap();
        let e = TokensFile::read(&big).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn write_lists_past_their_bounds_or_broken_are_refused_in_one_line() {
        let entry = |write: &str| {
            format!(
                "[[token]]\nid = \"a\"\nhash = \"{}\"\naccess = \"write\"\nuser = \"u\"\nwrite = {write}\ncreated = 1\n",
                blake3::hash(b"a").to_hex()
            )
        };
        let refused = |text: &str, says: &str| {
            let why = TokensFile::parse(text).unwrap_err();
            assert!(why.contains(says), "{why:?} should say {says:?}");
            assert!(!why.contains('\n'), "{why:?}");
        };
        refused(&entry("[\"art/[\"]"), "not a glob");
        refused(&entry("[\"\"]"), "empty");
        refused(&entry("\"art/**\""), "line");
        let many = format!(
            "[{}]",
            vec!["\"a\""; dmv_repo::MAX_WRITE_PATTERNS + 1].join(",")
        );
        refused(&entry(&many), "past the 256");
        let long = format!(
            "[\"{}\"]",
            "a".repeat(dmv_repo::MAX_WRITE_PATTERN_BYTES + 1)
        );
        refused(&entry(&long), "past the 1024");
        let file = TokensFile::parse(&entry("[\"art/**\"]")).unwrap();
        assert_eq!(
            file.tokens[0].write.as_deref(),
            Some(&["art/**".to_string()][..])
        );
        let file = TokensFile::parse(&entry("[]")).unwrap();
        assert_eq!(
            file.tokens[0].write.as_deref(),
            Some(&[][..]),
            "an empty list grants nothing"
        );
    }

    proptest::proptest! {
        /// Any write list the file takes reads back as it was written.
        #[test]
        fn write_lists_read_back_as_written(
            write in proptest::option::of(proptest::collection::vec("[a-z/*?\"\\\\ é]{1,12}", 0..6))
        ) {
            let write = write.map(|w| {
                w.into_iter()
                    .filter(|p| dmv_repo::WriteGrant::parse(std::slice::from_ref(p)).is_ok())
                    .collect::<Vec<_>>()
            });
            let file = TokensFile {
                tokens: vec![FileToken {
                    id: "a".into(),
                    hash: blake3::hash(b"a"),
                    access: TokenAccess::Write,
                    user: "u".into(),
                    name: None,
                    email: None,
                    write,
                    groups: Vec::new(),
                    created: 1,
                }],
            };
            proptest::prop_assert_eq!(TokensFile::parse(&file.to_text()).unwrap(), file);
        }
    }
}
