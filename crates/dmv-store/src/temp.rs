//! A file written under a temporary name and renamed into place when
//! complete: removed if the writer stops before that (a full disk, an I/O
//! error), so a failed command leaves no debris. A killed one still can;
//! gc removes those.

use std::path::{Path, PathBuf};

pub(crate) struct TempFile {
    path: PathBuf,
    keep: bool,
}

impl TempFile {
    pub fn new(path: PathBuf) -> TempFile {
        TempFile { path, keep: false }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// It was renamed into place: nothing to remove.
    pub fn kept(mut self) {
        self.keep = true;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
