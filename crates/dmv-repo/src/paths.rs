//! Repository paths: '/'-separated bytes relative to the working tree's root.
//! How they match a pathspec, how they are shown and serialized, and the
//! names dmv reserves in the working tree.

use crate::stat::Stat;

/// The repository's own directory at the root of the working tree.
pub const DMV_DIR: &str = ".dmv";

/// Names of the temporary files a checkout renames into place.
pub(crate) const TEMP_PREFIX: &str = ".dmv-tmp-";

/// Whether a path through `part` is never the user's to track: the
/// repository's own folder (a nested repository's too, in any case a
/// case-folding disk would take for it) or a file DMV writes under a
/// temporary name. The walk skips them; a path naming one is not staged.
pub(crate) fn is_reserved_name(part: &[u8]) -> bool {
    part.eq_ignore_ascii_case(DMV_DIR.as_bytes()) || part.starts_with(TEMP_PREFIX.as_bytes())
}

/// Whether `path` is `spec` or lies under it (an empty spec matches everything).
pub fn matches(path: &[u8], spec: &[u8]) -> bool {
    spec.is_empty()
        || path == spec
        || (path.starts_with(spec) && path.get(spec.len()) == Some(&b'/'))
}

/// Whether the folder at `dir` may hold paths that `spec` matches: it lies
/// under `spec`, or `spec` lies under it.
pub(crate) fn may_hold(dir: &[u8], spec: &[u8]) -> bool {
    matches(dir, spec) || matches(spec, dir)
}

/// A path as text for messages (bytes that are not UTF-8 shown as U+FFFD).
pub(crate) fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// `dir/shot.jpg` → `dir/shot.ours.jpg`; `README` → `README.ours`; `.hidden` → `.hidden.ours`.
pub(crate) fn side_name(path: &[u8], side: &str) -> Vec<u8> {
    let start = path.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
    let split = match path[start..].iter().rposition(|b| *b == b'.') {
        Some(i) if i > 0 => start + i,
        _ => path.len(),
    };
    [&path[..split], b".", side.as_bytes(), &path[split..]].concat()
}

/// Serializes a path as a string (for `--json` output).
pub(crate) fn ser_path<S: serde::Serializer>(p: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(p))
}

/// Serializes a list of paths as strings.
pub(crate) fn ser_paths<S: serde::Serializer>(p: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(p.iter().map(|p| String::from_utf8_lossy(p).into_owned()))
}

/// A path in `set` that cannot coexist with `p`: a file at one of its
/// ancestors, or anything below it.
pub(crate) fn clash_with(set: &std::collections::BTreeSet<Vec<u8>>, p: &[u8]) -> Option<Vec<u8>> {
    for (i, b) in p.iter().enumerate() {
        if *b == b'/' && set.contains(&p[..i]) {
            return Some(p[..i].to_vec());
        }
    }
    let below = [p, b"/"].concat();
    set.range(below.clone()..)
        .next()
        .filter(|q| q.starts_with(&below))
        .cloned()
}

/// Looks up tracked paths in the working tree without following a symlink
/// on the way: a folder replaced by a symlink (to somewhere outside the
/// tree, say) does not hold the tracked files, whatever the link points at,
/// so they read as not there and nothing is read or removed through it (as
/// git's `has_symlink_leading_path`). Remembers the last folder it checked,
/// and the last it found missing: paths in order share most of their
/// folders (a meta clone of 100,000 files in 100 folders, none of them there
/// yet, looked each file's folder up again).
pub(crate) struct Beneath<'r> {
    root: &'r std::path::Path,
    /// A folder (no trailing '/') known to be a real folder all the way down.
    checked: Vec<u8>,
    /// A folder known not to be one (missing, a file, a symlink): nothing is
    /// beneath it.
    not_a_folder: Option<Vec<u8>>,
    /// The last folder [`Beneath::stat`] looked in, open: the files in it are
    /// stat'ed relative to it, so the kernel does not walk each one's whole
    /// path from `/` again.
    #[cfg_attr(not(unix), allow(dead_code))]
    open: Option<(Vec<u8>, std::fs::File)>,
}

impl<'r> Beneath<'r> {
    pub(crate) fn new(root: &'r std::path::Path) -> Beneath<'r> {
        Beneath {
            root,
            checked: Vec::new(),
            not_a_folder: None,
            open: None,
        }
    }

    /// The lstat of `rel` (None: nothing there, or a folder on the way is
    /// missing, not a folder, or a symlink), taken from the file's open
    /// folder. Any other error (a folder we may not read) is an error: it
    /// says nothing about whether the file is there.
    #[cfg(unix)]
    pub(crate) fn stat(&mut self, rel: &[u8]) -> std::io::Result<Option<Stat>> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        let folder = folder_of(rel);
        if !self.folder_is_there(folder)? {
            return Ok(None);
        }
        if self
            .open
            .as_ref()
            .is_none_or(|(open, _)| open.as_slice() != folder)
        {
            // The root may be reached through a symlink; a folder beneath it may not.
            let flags = match folder.is_empty() {
                true => libc::O_DIRECTORY,
                false => libc::O_DIRECTORY | libc::O_NOFOLLOW,
            };
            let dir = match std::fs::File::options()
                .read(true)
                .custom_flags(flags)
                .open(self.at(folder))
            {
                Ok(dir) => dir,
                // Replaced since it was checked: by a symlink (ELOOP), a file, or nothing.
                Err(e) if is_not_there(&e) || e.raw_os_error() == Some(libc::ELOOP) => {
                    self.not_a_folder(folder);
                    return Ok(None);
                }
                Err(e) => return Err(e),
            };
            self.open = Some((folder.to_vec(), dir));
        }
        let Some((_, dir)) = &self.open else {
            return Ok(None);
        };
        let name = &rel[rel.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1)..];
        match rustix::fs::statat(
            dir,
            std::ffi::OsStr::from_bytes(name),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => Ok(Some(Stat::of_raw(&st))),
            Err(e) => match std::io::Error::from(e) {
                e if is_not_there(&e) => Ok(None),
                e => Err(e),
            },
        }
    }

    /// [`Beneath::stat`] where no folder can be held open to stat relative
    /// to (Windows): the whole path, once the folders on the way are checked.
    #[cfg(not(unix))]
    pub(crate) fn stat(&mut self, rel: &[u8]) -> std::io::Result<Option<Stat>> {
        if !self.folder_is_there(folder_of(rel))? {
            return Ok(None);
        }
        match std::fs::symlink_metadata(self.at(rel)) {
            Ok(meta) => Ok(Some(Stat::of(&meta))),
            Err(e) if is_not_there(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `folder` is a real folder all the way down from the root.
    fn folder_is_there(&mut self, folder: &[u8]) -> std::io::Result<bool> {
        if self
            .not_a_folder
            .as_deref()
            .is_some_and(|gone| matches(folder, gone))
        {
            return Ok(false);
        }
        if !matches(&self.checked, folder) {
            // Check each folder below the longest part already known good.
            let mut known = common_folder(folder, &self.checked);
            while known < folder.len() {
                let end = folder[known..]
                    .iter()
                    .skip(1)
                    .position(|b| *b == b'/')
                    .map_or(folder.len(), |i| known + 1 + i);
                match std::fs::symlink_metadata(self.at(&folder[..end])) {
                    Ok(m) if m.is_dir() => {}
                    Err(e) if !is_not_there(&e) => return Err(e),
                    _ => {
                        self.not_a_folder(&folder[..end]);
                        return Ok(false);
                    }
                }
                known = end;
            }
            self.checked = folder.to_vec();
        }
        Ok(true)
    }

    fn at(&self, rel: &[u8]) -> std::path::PathBuf {
        self.root.join(dmv_os::rel_path(rel))
    }

    /// Remembers `folder` as not one, for the lookups beneath it.
    fn not_a_folder(&mut self, folder: &[u8]) {
        self.not_a_folder = Some(folder.to_vec());
        if self
            .open
            .as_ref()
            .is_some_and(|(open, _)| matches(open, folder))
        {
            self.open = None;
        }
    }
}

/// The folder part of a path (empty at the root).
fn folder_of(rel: &[u8]) -> &[u8] {
    &rel[..rel.iter().rposition(|b| *b == b'/').unwrap_or(0)]
}

/// The length of the longest folder path both `a` and `b` lie in or are.
fn common_folder(a: &[u8], b: &[u8]) -> usize {
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if same == a.len().min(b.len())
        && (a.len() == b.len() || a.get(same) == Some(&b'/') || b.get(same) == Some(&b'/'))
    {
        return same;
    }
    a[..same].iter().rposition(|x| *x == b'/').unwrap_or(0)
}

/// Errors that mean "nothing is there": missing, or a file where a folder was.
pub(crate) fn is_not_there(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_found_missing_is_remembered_for_the_paths_beneath_it_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in ["ab/z", "b/z", "f"] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), f).unwrap();
        }
        let mut beneath = Beneath::new(root);
        assert!(beneath.stat(b"a/x").unwrap().is_none());
        assert!(beneath.stat(b"a/deeper/x").unwrap().is_none());
        // A folder whose name starts with the missing one's is another folder.
        assert!(beneath.stat(b"ab/z").unwrap().is_some());
        assert!(beneath.stat(b"b/z").unwrap().is_some());
        // A file where a folder would be: nothing beneath it either.
        assert!(beneath.stat(b"f/x").unwrap().is_none());
        assert!(beneath.stat(b"b/z").unwrap().is_some());
        assert!(beneath.stat(b"f").unwrap().is_some());
    }

    #[test]
    fn side_names() {
        assert_eq!(side_name(b"shot.jpg", "ours"), b"shot.ours.jpg");
        assert_eq!(side_name(b"dir.d/README", "theirs"), b"dir.d/README.theirs");
        assert_eq!(side_name(b"a/.hidden", "ours"), b"a/.hidden.ours");
        assert_eq!(side_name(b"a/b.tar.gz", "ours"), b"a/b.tar.ours.gz");
    }

    #[test]
    fn pathspecs() {
        assert!(matches(b"a/b", b""));
        assert!(matches(b"a/b", b"a"));
        assert!(matches(b"a/b", b"a/b"));
        assert!(!matches(b"ab", b"a"));
        assert!(!matches(b"a", b"a/b"));
    }

    #[test]
    fn a_tracked_path_behind_a_symlinked_folder_is_not_there() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("tree"), dir.path().join("outside"));
        for d in [root.join("a/b"), root.join("c"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        for f in [
            root.join("a/b/f"),
            root.join("a/g"),
            root.join("c/h"),
            outside.join("f"),
        ] {
            std::fs::write(f, "x").unwrap();
        }
        std::os::unix::fs::symlink(&outside, root.join("l")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        let mut b = Beneath::new(&root);
        // What it finds is the file's own lstat.
        let there = |b: &mut Beneath, p: &str| {
            let st = b.stat(p.as_bytes()).unwrap();
            if let Some(st) = st {
                assert_eq!(
                    st,
                    Stat::of(&std::fs::symlink_metadata(b.root.join(p)).unwrap()),
                    "{p}"
                );
            }
            st.is_some()
        };
        assert!(there(&mut b, "a/b/f"));
        assert!(there(&mut b, "a/g"));
        assert!(!there(&mut b, "l/f"), "through a symlinked folder");
        assert!(there(&mut b, "l"), "the symlink itself");
        assert!(!there(&mut b, "file/x"), "under a file");
        assert!(!there(&mut b, "gone/x"));
        assert!(there(&mut b, "c/h"));
        // Once a checked folder becomes a symlink, a fresh lookup sees it.
        std::fs::rename(root.join("a"), dir.path().join("a2")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a2"), root.join("a")).unwrap();
        assert!(!there(&mut Beneath::new(&root), "a/b/f"));
        // So does one that opened the folder before it became a symlink and
        // is past it, and one whose folder vanished.
        assert!(there(&mut b, "c/h"));
        std::fs::rename(root.join("c"), dir.path().join("c2")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("c2"), root.join("c")).unwrap();
        let mut fresh = Beneath::new(&root);
        assert!(!there(&mut fresh, "c/h"));
        std::fs::remove_file(root.join("c")).unwrap();
        assert!(!there(&mut fresh, "c/h"));
        // The root itself may be reached through a symlink.
        std::os::unix::fs::symlink(&root, dir.path().join("via")).unwrap();
        assert!(there(&mut Beneath::new(&dir.path().join("via")), "file"));
        assert!(!there(
            &mut Beneath::new(&dir.path().join("via")),
            "not-here"
        ));
    }

    #[test]
    fn clash_lookup() {
        let set: std::collections::BTreeSet<Vec<u8>> =
            [b"a".to_vec(), b"a.txt".to_vec(), b"d/e".to_vec()].into();
        assert_eq!(clash_with(&set, b"a/b"), Some(b"a".to_vec()));
        assert_eq!(clash_with(&set, b"d"), Some(b"d/e".to_vec()));
        assert_eq!(clash_with(&set, b"a.txt2"), None);
    }

    #[test]
    fn common_folder_stops_at_a_whole_name() {
        assert_eq!(common_folder(b"a/b", b"a/b"), 3);
        assert_eq!(common_folder(b"a/b/c", b"a/b"), 3);
        assert_eq!(common_folder(b"a/bc", b"a/b"), 1);
        assert_eq!(common_folder(b"ab", b"a"), 0);
        assert_eq!(common_folder(b"x", b""), 0);
    }
}
