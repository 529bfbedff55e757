//! The audit log of a served repository: who pushed which refs (old →
//! new), locked, unlocked, broke a lock, uploaded from a browser,
//! dropped data and mentioned someone in a comment, and when. A server decides each event and records it
//! here (dmv-sync's serving code); people read it with `audit` and on the
//! web UI's audit page.
//!
//! On disk it is `.dmv/audit/YYYY-MM.jsonl`, one file a month (UTC), each
//! event one line of JSON of at most [`MAX_EVENT_LINE`] bytes, appended
//! with `O_APPEND` in one write: servers of one directory never interleave
//! a line, and nothing already written is rewritten. A reader reads at most
//! a budget of bytes, newest months first, and passes over lines that are
//! not events (a torn tail, damage) by counting them.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// An event's line, its newline included: longer lists of paths or refs
/// are cut, and how many were left out is said.
pub const MAX_EVENT_LINE: usize = 4 << 10;
/// Bytes a reading of the log reads at most (the newest first).
pub const MAX_AUDIT_READ: u64 = 16 << 20;
/// A path, a ref name, a user or a detail is cut at this many bytes.
const MAX_FIELD: usize = 512;

/// One ref an event moved: its name, and the commits before and after in
/// hex (None: it did not exist / it was deleted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRef {
    /// The ref's full name (`refs/heads/main`).
    pub name: String,
    /// What it held before.
    pub old: Option<String>,
    /// What it holds now.
    pub new: Option<String>,
}

/// One event of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Seconds since 1970 (UTC).
    pub time: i64,
    /// `push`, `lock`, `unlock`, `break-lock`, `upload`, `drop` or `mention`.
    pub event: String,
    /// Who, as the server knows them (a token's user; over ssh the account).
    pub user: String,
    /// The refs moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<AuditRef>,
    /// Refs left out to keep the line within its bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_refs: u64,
    /// The paths locked, unlocked or uploaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Paths left out to keep the line within its bound.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_paths: u64,
    /// What else is worth saying (a drop's count and bytes freed, a
    /// comment's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The people a comment mentions (`@ann`), for a `mention` event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<String>,
}

/// Names one event lists as mentioned, at most.
const MAX_MENTIONS: usize = 64;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn cut(text: &mut String) {
    if text.len() > MAX_FIELD {
        let mut end = MAX_FIELD;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

impl AuditEvent {
    /// An event of `kind` by `user` now, naming nothing yet.
    pub fn new(kind: &str, user: &str) -> AuditEvent {
        AuditEvent {
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            event: kind.to_string(),
            user: user.to_string(),
            refs: Vec::new(),
            more_refs: 0,
            paths: Vec::new(),
            more_paths: 0,
            detail: None,
            mentions: Vec::new(),
        }
    }

    /// The event cut to fit its bound: long fields shortened, then paths
    /// and refs left out from the end (counted in `more_*`).
    pub fn bounded(mut self) -> AuditEvent {
        cut(&mut self.event);
        cut(&mut self.user);
        for p in &mut self.paths {
            cut(p);
        }
        for r in &mut self.refs {
            cut(&mut r.name);
        }
        if let Some(d) = &mut self.detail {
            cut(d);
        }
        self.mentions.truncate(MAX_MENTIONS);
        for m in &mut self.mentions {
            cut(m);
        }
        // A path is at least a few bytes: more than this never fits.
        for (list, more) in [(self.paths.len(), 0), (self.refs.len(), 1)] {
            if list > 256 {
                match more {
                    0 => {
                        self.more_paths += (list - 256) as u64;
                        self.paths.truncate(256);
                    }
                    _ => {
                        self.more_refs += (list - 256) as u64;
                        self.refs.truncate(256);
                    }
                }
            }
        }
        while self.encoded_len() > MAX_EVENT_LINE {
            if self.paths.pop().is_some() {
                self.more_paths += 1;
            } else if self.refs.pop().is_some() {
                self.more_refs += 1;
            } else if self.mentions.pop().is_some() {
            } else {
                // Only its fixed fields are left: a few hundred bytes each at most.
                self.detail = None;
                break;
            }
        }
        self
    }

    fn encoded_len(&self) -> usize {
        serde_json::to_vec(self).map_or(0, |v| v.len()) + 1
    }

    /// The event as its line of the log (newline included), within its bound.
    pub fn line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(&self.clone().bounded()).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// The folder of a repository's audit log (`dmv_dir` is its `.dmv`).
pub fn audit_dir(dmv_dir: &Path) -> PathBuf {
    dmv_dir.join("audit")
}

/// The month file an event at `time` goes to.
fn month_file(time: i64) -> String {
    let (y, m, ..) = crate::time::civil(time);
    format!("{y:04}-{m:02}.jsonl")
}

/// Whether `name` is a month file's name (`YYYY-MM.jsonl`).
fn is_month_file(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 13
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && name.ends_with(".jsonl")
}

/// Appends `event` to the log of the repository whose `.dmv` is `dmv_dir`,
/// in one write of its whole line.
pub fn append_audit(dmv_dir: &Path, event: &AuditEvent) -> std::io::Result<()> {
    let dir = audit_dir(dmv_dir);
    std::fs::create_dir_all(&dir)?;
    let line = event.line();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join(month_file(event.time)))?;
    let written = file.write(&line)?;
    if written != line.len() {
        return Err(std::io::Error::other(format!(
            "only {written} of the {} bytes of an audit event were written",
            line.len()
        )));
    }
    Ok(())
}

/// What a reading of the log found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AuditRead {
    /// The events, oldest first.
    pub events: Vec<AuditEvent>,
    /// Lines that were not events (damage, a torn tail): passed over.
    pub unreadable: u64,
    /// Whether older events were left unread to keep within the budget.
    pub cut_short: bool,
}

/// The events at or after `since` (seconds; None: all) of the log of the
/// repository whose `.dmv` is `dmv_dir`, reading at most `budget` bytes,
/// the newest months first. No log yet is no events.
pub fn read_audit(dmv_dir: &Path, since: Option<i64>, budget: u64) -> std::io::Result<AuditRead> {
    let dir = audit_dir(dmv_dir);
    let mut months: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| is_month_file(n))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AuditRead::default()),
        Err(e) => return Err(e),
    };
    months.sort();
    let first = since.map(month_file);
    let mut read = AuditRead::default();
    let mut left = budget;
    let mut newest_first: Vec<Vec<AuditEvent>> = Vec::new();
    for month in months.iter().rev() {
        if first.as_ref().is_some_and(|f| month < f) {
            break;
        }
        if left == 0 {
            read.cut_short = true;
            break;
        }
        let mut file = std::fs::File::open(dir.join(month))?;
        let len = file.metadata()?.len();
        let mut bytes = Vec::new();
        if len > left {
            // Only its newest part: from the first whole line after the cut.
            file.seek(SeekFrom::Start(len - left))?;
            read.cut_short = true;
        }
        file.take(left).read_to_end(&mut bytes)?;
        left -= bytes.len() as u64;
        let whole = match len > bytes.len() as u64 {
            true => bytes
                .iter()
                .position(|&b| b == b'\n')
                .map_or(&bytes[..0], |i| &bytes[i + 1..]),
            false => &bytes[..],
        };
        let mut events = Vec::new();
        for line in whole.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match (line.len() < MAX_EVENT_LINE)
                .then(|| serde_json::from_slice::<AuditEvent>(line).ok())
                .flatten()
            {
                Some(e) if since.is_none_or(|s| e.time >= s) => events.push(e),
                Some(_) => {}
                None => read.unreadable += 1,
            }
        }
        newest_first.push(events);
    }
    for events in newest_first.into_iter().rev() {
        read.events.extend(events);
    }
    // Lines of one month are in the order they were appended; servers' clocks may differ a little.
    read.events.sort_by_key(|e| e.time);
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time: i64, paths: usize) -> AuditEvent {
        AuditEvent {
            time,
            paths: (0..paths)
                .map(|i| format!("art/scene-{i:06}.psd"))
                .collect(),
            ..AuditEvent::new("lock", "ann")
        }
    }

    #[test]
    fn a_line_keeps_to_its_bound_and_counts_what_it_left_out() {
        let line = event(0, 100_000).line();
        assert!(line.len() <= MAX_EVENT_LINE, "{}", line.len());
        let back: AuditEvent = serde_json::from_slice(&line[..line.len() - 1]).unwrap();
        assert_eq!(back.paths.len() as u64 + back.more_paths, 100_000);
        assert!(back.paths.len() > 10);
        let mut long = event(0, 1);
        long.user = "u".repeat(100_000);
        long.paths = vec!["é".repeat(50_000); 3];
        assert!(long.line().len() <= MAX_EVENT_LINE);
        // A comment's names: each cut, at most MAX_MENTIONS, then fewer to fit.
        let mut named = event(0, 0);
        named.detail = Some("d".repeat(10_000));
        named.mentions = (0..1000)
            .map(|i| format!("{i}{}", "n".repeat(600)))
            .collect();
        let line = named.line();
        assert!(line.len() <= MAX_EVENT_LINE, "{}", line.len());
        let back: AuditEvent = serde_json::from_slice(&line[..line.len() - 1]).unwrap();
        assert!(!back.mentions.is_empty() && back.mentions.len() < MAX_MENTIONS);
        assert!(back
            .mentions
            .iter()
            .all(|m| m.len() <= MAX_FIELD + '…'.len_utf8()));
    }

    #[test]
    fn events_are_appended_by_month_and_read_within_a_budget() {
        let dir = tempfile::tempdir().unwrap();
        let jan = 1_767_225_600; // 2026-01-01
        for i in 0..10 {
            append_audit(dir.path(), &event(jan + i, 2)).unwrap();
            append_audit(dir.path(), &event(jan + 40 * 86_400 + i, 2)).unwrap();
        }
        let mut files: Vec<_> = std::fs::read_dir(audit_dir(dir.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(files, ["2026-01.jsonl", "2026-02.jsonl"]);
        // Damage is passed over and counted.
        std::fs::OpenOptions::new()
            .append(true)
            .open(audit_dir(dir.path()).join("2026-02.jsonl"))
            .unwrap()
            .write_all(b"{not json\n")
            .unwrap();
        let all = read_audit(dir.path(), None, MAX_AUDIT_READ).unwrap();
        assert_eq!(
            (all.events.len(), all.unreadable, all.cut_short),
            (20, 1, false)
        );
        assert!(all.events.windows(2).all(|w| w[0].time <= w[1].time));
        let feb = read_audit(dir.path(), Some(jan + 40 * 86_400 + 5), MAX_AUDIT_READ).unwrap();
        assert_eq!(feb.events.len(), 5);
        // A small budget reads the newest events only, whole lines.
        let line = event(0, 2).line().len() as u64;
        let some = read_audit(dir.path(), None, line * 3 + 5).unwrap();
        assert!(some.cut_short);
        assert!(!some.events.is_empty() && some.events.len() <= 3);
        assert!(some.events.iter().all(|e| e.time >= jan + 40 * 86_400));
        assert_eq!(
            read_audit(&dir.path().join("none"), None, 10).unwrap(),
            AuditRead::default()
        );
    }
}
