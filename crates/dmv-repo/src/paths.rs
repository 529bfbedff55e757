//! Repository paths: '/'-separated bytes relative to the working tree's root.
//! How they match a pathspec, how they are shown and serialized, and the
//! names dmv reserves in the working tree.

/// The repository's own directory at the root of the working tree.
pub const DMV_DIR: &str = ".dmv";

/// Names of the temporary files a checkout renames into place.
pub(crate) const TEMP_PREFIX: &str = ".dmv-tmp-";

/// Whether `path` is `spec` or lies under it (an empty spec matches everything).
pub(crate) fn matches(path: &[u8], spec: &[u8]) -> bool {
    spec.is_empty() || path == spec || (path.starts_with(spec) && path.get(spec.len()) == Some(&b'/'))
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
