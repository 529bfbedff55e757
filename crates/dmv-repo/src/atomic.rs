//! Replacing a file durably: readers see the old or the new content, never
//! a mix; and the lock files that keep two writers of one file apart.

use std::io::Write;
use std::path::Path;

use crate::error::IoContext;
use crate::RepoResult;

/// Writes to a temporary file, syncs it, renames it over `path` and syncs the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> RepoResult<()> {
    write_atomic_with(path, &mut |out| out.write_all(bytes))
}

/// [`write_atomic`] of what `write` writes, streamed (nothing held whole in memory).
pub fn write_atomic_with(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> RepoResult<()> {
    write_atomic_mode(path, 0o666, write)
}

/// [`write_atomic`] of a file only its owner may read or write (it holds a secret).
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> RepoResult<()> {
    write_atomic_mode(path, 0o600, &mut |out| out.write_all(bytes))
}

/// `mode` as `open` takes it (the umask applies too), from the file's creation on.
fn write_atomic_mode(
    path: &Path,
    mode: u32,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> RepoResult<()> {
    use dmv_os::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let _ = std::fs::remove_file(&tmp);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        write(&mut out)?;
        let f = out.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(crate::RepoError::io(&tmp, e));
    }
    std::fs::rename(&tmp, path).at(path)?;
    dmv_os::sync_dir(dir).at(dir)?;
    Ok(())
}

/// Replaces a cache file: renamed into place but never synced. After a
/// crash it may be the old content, the new, or empty; its reader must take
/// any of them for stale, never for wrong (a fsync costs a small commit more
/// than the cache saves it).
pub fn write_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Overwrites a small cache file in place, never synced. Replacing it by a
/// rename frees the old file's block, a synchronous discard on file systems
/// mounted with `discard` (~0.1 ms here, on every small commit); in place, a
/// reader may see a mix of old and new bytes, as may a crash, so the content
/// must carry its own checksum.
pub fn overwrite_cache(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use dmv_os::FileExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    file.write_all_at(bytes, 0)?;
    file.set_len(bytes.len() as u64)
}

/// Opens (creating it) the lock file at `path` and takes its exclusive
/// lock, waiting for another holder. The kernel drops it when the file is
/// closed or its process dies, so a killed writer never leaves it held.
pub(crate) fn hold_lock_file(path: &Path) -> RepoResult<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .at(path)?;
    file.lock().at(path)?;
    Ok(file)
}
