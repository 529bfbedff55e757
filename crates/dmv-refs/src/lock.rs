//! The writer lock: `tables.list.lock`, created exclusively (link(2) of a
//! prepared temp file, which fails if the lock exists just as O_CREAT|O_EXCL
//! would). Its first line names the holder (pid, host); at commit the new table list is
//! appended and the file is renamed over `tables.list`, so taking the lock,
//! publishing the new list and releasing the lock are one file's life.
//!
//! The holder also keeps an flock(2) on the file. A pid alone can be reused;
//! the flock lets a waiter prove the holder is really gone (the kernel drops
//! it when the process dies) and serialises waiters that try to break the
//! same stale lock, so two of them can never delete a fresh lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use dmv_os::{LockKind, MetadataExt};

use crate::failpoint;
use crate::RefError;

pub(crate) const LIST: &str = "tables.list";
pub(crate) const LOCK: &str = "tables.list.lock";
const HEADER_PREFIX: &str = "# dmv-refs tables.list; written by pid ";

pub(crate) struct Lock {
    dir: PathBuf,
    path: PathBuf,
    file: Option<File>,
    committed: bool,
}

enum Holder {
    Gone,
    /// Proven dead and removed by us: retry at once.
    Broken,
    Alive {
        desc: String,
        advice: String,
    },
}

pub(crate) fn hostname() -> String {
    let host = dmv_os::host_name();
    // The writer line of tables.list never ends like a table name: one that
    // does is a table line joined to it by a damaged newline (see `parse_list`).
    match host.ends_with(".ref") {
        true => format!("{host}-host"),
        false => host,
    }
}

fn pid_alive(pid: i32) -> bool {
    // A negative pid cannot be told: be conservative.
    u32::try_from(pid).map_or(true, dmv_os::process_alive)
}

fn parse_header(content: &str) -> Option<(i32, String)> {
    let line = content.lines().next()?;
    let rest = line.strip_prefix(HEADER_PREFIX)?;
    let (pid, host) = rest.split_once(" on host ")?;
    Some((pid.trim().parse().ok()?, host.trim().to_string()))
}

impl Lock {
    /// Waits up to `timeout` (exponential backoff from 1 ms to 100 ms).
    pub(crate) fn acquire(dir: &Path, timeout: Duration) -> Result<Lock, RefError> {
        let start = Instant::now();
        let mut delay = Duration::from_millis(1);
        loop {
            if let Some(l) = Self::try_create(dir)? {
                return Ok(l);
            }
            let path = dir.join(LOCK);
            match inspect(&path)? {
                Holder::Gone | Holder::Broken => continue,
                Holder::Alive { desc, advice } => {
                    let waited = start.elapsed();
                    if waited >= timeout {
                        return Err(RefError::Locked {
                            path,
                            holder: desc,
                            waited: timeout,
                            advice,
                        });
                    }
                    // Jitter so two waiters do not retry in lock step.
                    let jitter = Duration::from_micros(rand::random::<u64>() % 1000);
                    std::thread::sleep((delay + jitter).min(timeout - waited));
                    delay = (delay * 2).min(Duration::from_millis(100));
                }
            }
        }
    }

    /// One attempt (plus breaking a provably stale lock); None if busy.
    pub(crate) fn try_acquire(dir: &Path) -> Result<Option<Lock>, RefError> {
        for _ in 0..3 {
            if let Some(l) = Self::try_create(dir)? {
                return Ok(Some(l));
            }
            match inspect(&dir.join(LOCK))? {
                Holder::Alive { .. } => return Ok(None),
                Holder::Gone | Holder::Broken => {}
            }
        }
        Ok(None)
    }

    /// The lock must never be seen without its owner line, or a writer
    /// killed right after creating it would leave a lock nobody can prove
    /// stale. So the file is prepared (owner line written, flock taken)
    /// under a private temporary name and then hard-linked into place:
    /// link(2) fails if the lock exists, exactly like O_CREAT|O_EXCL.
    fn try_create(dir: &Path) -> Result<Option<Lock>, RefError> {
        let path = dir.join(LOCK);
        if path.exists() {
            return Ok(None);
        }
        let host = hostname();
        let tmp = dir.join(format!(
            "{LOCK}.tmp-{}-{}-{:08x}",
            sanitize(&host),
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| RefError::io(&tmp, e))?;
        let res = (|| {
            dmv_os::lock(&file, LockKind::Exclusive)?;
            let header = format!("{HEADER_PREFIX}{} on host {host}\n", std::process::id());
            file.write_all(header.as_bytes())?;
            std::fs::hard_link(&tmp, &path)
        })();
        let _ = std::fs::remove_file(&tmp);
        match res {
            Ok(()) => Ok(Some(Lock {
                dir: dir.to_path_buf(),
                path,
                file: Some(file),
                committed: false,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
            // File systems without hard links: plain O_CREAT|O_EXCL, at the
            // price of a short window in which the lock has no owner line.
            Err(e) if dmv_os::no_hard_links(&e) => Self::create_direct(dir, &path, &host),
            Err(e) => Err(RefError::io(&path, e)),
        }
    }

    fn create_direct(dir: &Path, path: &Path, host: &str) -> Result<Option<Lock>, RefError> {
        let mut file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
            Err(e) => return Err(RefError::io(path, e)),
        };
        let mut lock = Lock {
            dir: dir.to_path_buf(),
            path: path.to_path_buf(),
            file: None,
            committed: false,
        };
        dmv_os::lock(&file, LockKind::Exclusive).map_err(|e| RefError::io(path, e))?;
        let header = format!("{HEADER_PREFIX}{} on host {host}\n", std::process::id());
        file.write_all(header.as_bytes())
            .map_err(|e| RefError::io(path, e))?;
        lock.file = Some(file);
        Ok(Some(lock))
    }

    /// Publishes `body` (one table file name per line) as the new
    /// tables.list: append, fsync, rename over the list, fsync the directory.
    pub(crate) fn commit(
        mut self,
        body: &str,
        fp_written: &'static str,
        fp_renamed: &'static str,
    ) -> Result<(), RefError> {
        let path = self.path.clone();
        let ioe = |e| RefError::io(&path, e);
        let f = self
            .file
            .as_mut()
            .ok_or_else(|| ioe(std::io::Error::other("lock already released")))?;
        f.write_all(body.as_bytes()).map_err(ioe)?;
        f.sync_all().map_err(ioe)?;
        failpoint::hit(fp_written);
        let list = self.dir.join(LIST);
        std::fs::rename(&self.path, &list).map_err(ioe)?;
        // From here the lock path may belong to another writer: never unlink.
        self.committed = true;
        failpoint::hit(fp_renamed);
        sync_dir(&self.dir)?;
        self.file = None;
        Ok(())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), RefError> {
    dmv_os::sync_dir(dir).map_err(|e| RefError::io(dir, e))
}

/// Looks at an existing lock; removes it only when provably stale: written
/// on this host by a pid that is gone, nobody holds its flock, and the path
/// still names the very file we examined.
fn inspect(path: &Path) -> Result<Holder, RefError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holder::Gone),
        Err(e) => return Err(RefError::io(path, e)),
    };
    let mut content = String::new();
    let _ = Read::by_ref(&mut f).take(4096).read_to_string(&mut content);
    let here = hostname();
    let shown = path.display();
    let Some((pid, host)) = parse_header(&content) else {
        return Ok(Holder::Alive {
            desc: "an unknown process".to_string(),
            advice: format!("the lock names no owner yet; if no dmv process is running, delete {shown} (safe: tables.list is only ever replaced atomically)"),
        });
    };
    if host != here {
        return Ok(Holder::Alive {
            desc: format!("process {pid} on host {host}"),
            advice: format!(
                "cannot check a process on another host; once no dmv process on {host} is writing refs, delete {shown} (safe: tables.list is only ever replaced atomically)"
            ),
        });
    }
    if pid_alive(pid) {
        return Ok(Holder::Alive {
            desc: format!("process {pid}"),
            advice: format!("process {pid} is still running; if it is not a dmv process (reused pid), delete {shown} (safe once no dmv process is writing refs)"),
        });
    }
    let got = dmv_os::try_lock(&f, LockKind::Exclusive).unwrap_or(false);
    if !got {
        return Ok(Holder::Alive {
            desc: format!("process {pid} (gone, but its lock file is still held open)"),
            advice: format!("if no dmv process is running, delete {shown} (safe: tables.list is only ever replaced atomically)"),
        });
    }
    let same = match (f.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    };
    if !same {
        return Ok(Holder::Gone);
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(Holder::Broken),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Holder::Gone),
        Err(e) => Err(RefError::io(path, e)),
    }
}

fn sanitize(host: &str) -> String {
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether `name` is a lock temp file of a dead process on this host, left
/// by a kill between creating it and linking it into place.
pub(crate) fn is_dead_lock_temp(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(&format!("{LOCK}.tmp-")) else {
        return false;
    };
    let mut parts = rest.rsplitn(3, '-');
    let (_rand, pid, host) = (parts.next(), parts.next(), parts.next());
    match (pid.and_then(|p| p.parse::<i32>().ok()), host) {
        (Some(pid), Some(host)) => host == sanitize(&hostname()) && !pid_alive(pid),
        _ => false,
    }
}

/// What tables.list says: its table files, bottom first, and the top table
/// itself when it is small enough to travel inside the list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct List {
    pub names: Vec<String>,
    pub inline: Option<Vec<u8>>,
}

/// The last line of a list whose top table travels inside it: this prefix,
/// then the table's bytes in standard base64 (padded).
const INLINE_PREFIX: &str = "inline ";

/// The list line carrying `table` inline.
pub(crate) fn inline_line(table: &[u8]) -> String {
    format!("{INLINE_PREFIX}{}\n", BASE64.encode(table))
}

/// The list exactly as written: an optional first line naming its writer
/// (`#`, for people), then one table name per line, then maybe the inline
/// table's line, each line ended. A stray byte anywhere else (a blank, a
/// `#` that would hide a table, a lost newline) is damage, not something to
/// read around.
pub(crate) fn parse_list(content: &str) -> Option<List> {
    if !content.is_empty() && !content.ends_with('\n') {
        return None;
    }
    let mut out = List::default();
    for (i, line) in content.split_terminator('\n').enumerate() {
        // A writer line that ends like a table name, or holds the inline
        // table's prefix (host names hold no space), swallowed a line whose
        // newline flipped.
        if i == 0
            && line.starts_with('#')
            && !line.ends_with(".ref")
            && !line.contains(INLINE_PREFIX)
        {
            continue;
        }
        if out.inline.is_some() {
            return None; // the inline table is the top one: the last line
        }
        match line.strip_prefix(INLINE_PREFIX) {
            Some(text) => out.inline = Some(BASE64.decode(text).ok()?),
            None if valid_table_name(line) => out.names.push(line.to_string()),
            None => return None,
        }
    }
    Some(out)
}

/// `<min hex>-<max hex>-<random hex>.ref`; anything else in the list is
/// corruption, and refusing it also keeps `..` or `/` out of paths we open.
pub(crate) fn valid_table_name(s: &str) -> bool {
    let Some(stem) = s.strip_suffix(".ref") else {
        return false;
    };
    let parts: Vec<&str> = stem.split('-').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 16
                && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LIST_TEXT: &str = "# dmv-refs tables.list; written by pid 7 on host h\n00000001-00000004-3e2117b8.ref\n00000005-00000005-f2e2e34c.ref\n";

    #[test]
    fn a_list_reads_as_written() {
        assert_eq!(
            parse_list(LIST_TEXT).unwrap().names,
            vec![
                "00000001-00000004-3e2117b8.ref",
                "00000005-00000005-f2e2e34c.ref"
            ]
        );
        assert_eq!(parse_list(LIST_TEXT).unwrap().inline, None);
        assert_eq!(parse_list("").unwrap(), List::default());
    }

    const INLINE_TEXT: &str = "# dmv-refs tables.list; written by pid 7 on host h\n00000001-00000004-3e2117b8.ref\ninline AAFhYmM=\n";

    #[test]
    fn a_top_table_inline_is_the_last_line_in_base64() {
        assert_eq!(inline_line(b"\x00\x01abc"), "inline AAFhYmM=\n");
        let list = parse_list(INLINE_TEXT).unwrap();
        assert_eq!(list.names, vec!["00000001-00000004-3e2117b8.ref"]);
        assert_eq!(list.inline.as_deref(), Some(&b"\x00\x01abc"[..]));
        assert_eq!(
            parse_list("inline AAFhYmM=\n").unwrap(),
            List {
                names: vec![],
                inline: Some(b"\x00\x01abc".to_vec())
            }
        );
        // Only last, only once, only canonical base64; and a writer's line that swallowed it is damage.
        for bad in [
            "inline AAFhYmM=\n00000001-00000004-3e2117b8.ref\n",
            "inline AAFhYmM=\ninline AAFhYmM=\n",
            "inline AAFhYmN=\n",
            "inline AAFhYmM\n",
            "inline  AAFhYmM=\n",
            "# dmv-refs tables.list; written by pid 7 on host hinline AAFhYmM=\n",
        ] {
            assert_eq!(parse_list(bad), None, "{bad:?}");
        }
    }

    /// What `text` says once bit `bit` of byte `at` is flipped (None: unreadable).
    fn parsed_with_flip(text: &str, at: usize, bit: u8) -> Option<List> {
        let mut bytes = text.as_bytes().to_vec();
        bytes[at] ^= 1 << bit;
        std::str::from_utf8(&bytes).ok().and_then(parse_list)
    }

    proptest! {
        /// Past the writer's line, every flipped bit changes what the list says or makes it unreadable.
        #[test]
        fn no_flip_past_the_header_text_goes_unnoticed(at in 50usize..LIST_TEXT.len(), bit in 0u8..8) {
            prop_assert_ne!(parsed_with_flip(LIST_TEXT, at, bit), parse_list(LIST_TEXT));
        }

        #[test]
        fn no_flip_past_the_header_of_an_inline_list_goes_unnoticed(at in 50usize..INLINE_TEXT.len(), bit in 0u8..8) {
            prop_assert_ne!(parsed_with_flip(INLINE_TEXT, at, bit), parse_list(INLINE_TEXT));
        }

        #[test]
        fn any_text_parses_without_panic(text in ".{0,200}") {
            let _ = parse_list(&text);
        }
    }
}
