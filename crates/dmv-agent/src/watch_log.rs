//! `.dmv/watch.log`: what a watcher did, a line each with the time, kept
//! to two files of [`LOG_LIMIT`] at most however long it runs.

use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};

/// The log's name in `.dmv`.
pub const LOG_FILE: &str = "watch.log";

/// A log grown past this is moved to `watch.log.1` (the one before it
/// goes) and begun again: a watcher running for years keeps 8 MiB at most.
pub const LOG_LIMIT: u64 = 4 << 20;

/// The open log of one watcher.
pub struct WatchLog {
    path: PathBuf,
    file: std::fs::File,
}

impl WatchLog {
    /// Opens (or creates) the log in the `.dmv` folder `dmv`, to append to.
    pub fn open(dmv: &Path) -> std::io::Result<WatchLog> {
        let path = dmv.join(LOG_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        Ok(WatchLog { path, file })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `line` (a newline ends it), then starts a new file once this
    /// one is past [`LOG_LIMIT`]. A failure is not reported: the log is a
    /// record of the watcher, never a reason for it to stop.
    pub fn write(&mut self, line: &str) {
        let _ = self.file.write_all(format!("{line}\n").as_bytes());
        if self.file.metadata().is_ok_and(|m| m.len() > LOG_LIMIT) {
            let older = self.path.with_extension("log.1");
            if let Ok(fresh) = std::fs::rename(&self.path, &older).and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            }) {
                self.file = fresh;
            }
        }
    }

    /// The last `n` lines of the log in `dmv` (none when there is no log),
    /// read from its last 64 KiB, not whole.
    pub fn last_lines(dmv: &Path, n: usize) -> std::io::Result<Vec<String>> {
        let Ok(mut file) = std::fs::File::open(dmv.join(LOG_FILE)) else {
            return Ok(Vec::new());
        };
        let len = file.metadata()?.len();
        let from = len.saturating_sub(64 << 10);
        file.seek(std::io::SeekFrom::Start(from))?;
        let mut lines: Vec<String> = std::io::BufReader::new(file)
            .lines()
            .map_while(|l| l.ok())
            .collect();
        if from > 0 && !lines.is_empty() {
            // Begun mid-line.
            lines.remove(0);
        }
        Ok(lines.split_off(lines.len().saturating_sub(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_past_its_limit_starts_again_and_keeps_one_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = WatchLog::open(dir.path()).unwrap();
        let line = "x".repeat(1023);
        // 4 MiB and a line: the file moves to watch.log.1 once, and the next line starts a new one.
        for _ in 0..(LOG_LIMIT / 1024 + 1) {
            log.write(&line);
        }
        log.write("after");
        let older = std::fs::metadata(dir.path().join("watch.log.1"))
            .unwrap()
            .len();
        assert_eq!(older, (LOG_LIMIT / 1024 + 1) * 1024);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap(),
            "after\n"
        );
        assert_eq!(WatchLog::last_lines(dir.path(), 10).unwrap(), ["after"]);
    }

    #[test]
    fn the_last_lines_come_from_the_end_of_a_long_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = WatchLog::open(dir.path()).unwrap();
        for i in 0..10_000 {
            log.write(&format!("line {i}"));
        }
        let last = WatchLog::last_lines(dir.path(), 3).unwrap();
        assert_eq!(last, ["line 9997", "line 9998", "line 9999"]);
        assert!(WatchLog::last_lines(&dir.path().join("none"), 3)
            .unwrap()
            .is_empty());
    }
}
