//! Replacing a file durably: readers see the old or the new content, never a mix.

use std::io::Write;
use std::path::Path;

use crate::error::IoContext;
use crate::RepoResult;

/// Writes to a temporary file, syncs it, renames it over `path` and syncs the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> RepoResult<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), std::process::id()));
    let mut f = std::fs::File::create(&tmp).at(&tmp)?;
    f.write_all(bytes).at(&tmp)?;
    f.sync_all().at(&tmp)?;
    drop(f);
    std::fs::rename(&tmp, path).at(path)?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    Ok(())
}
