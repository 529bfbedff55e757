//! Unmounting a folder that `serve` shows, from any process: the
//! programs that may (fusermount3 for whoever mounted it, umount(8) for
//! root), tried in turn.

use std::path::Path;

use crate::error::MountError;

/// Unmounts a folder mounted by [`crate::serve`] (in this process or another).
pub fn unmount(dir: &Path) -> Result<(), MountError> {
    let mut said = Vec::new();
    // fusermount3 as any user; umount(8) as root, or where fuse3 is not installed.
    for (program, args) in [
        ("fusermount3", &["-u"][..]),
        ("fusermount", &["-u"][..]),
        ("umount", &[][..]),
    ] {
        match std::process::Command::new(program)
            .args(args)
            .arg(dir)
            .output()
        {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => said.push(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => said.push(format!("{program}: {e}")),
        }
    }
    let detail = said
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or_else(|| "no fusermount3, fusermount or umount here".to_string());
    Err(MountError::Unmount {
        dir: dir.to_path_buf(),
        detail,
    })
}
