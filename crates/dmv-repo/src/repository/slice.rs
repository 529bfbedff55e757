//! A replica's slice: which file data it keeps. Every replica holds every
//! commit and tree of the history it has; a slice says which files' data
//! (chunks and file nodes) it holds too. Stored in the replica's config.

use std::fmt;

use dmv_os::OsStrExt;
use serde::{Deserialize, Serialize};

/// Which files' data a replica fetches and keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Slice {
    /// Everything.
    #[default]
    Full,
    /// Commits and trees (names, kinds, sizes), no file data.
    Meta,
    /// The data of the paths matching any of these globs, in every commit.
    Paths(Vec<String>),
    /// The data of the files of the last N commits of each branch.
    Recent(u32),
}

/// Why a slice could not be read.
#[derive(Debug, thiserror::Error)]
#[error("bad slice {text:?}: {detail} (expected full, meta, paths:GLOB[,GLOB…] or recent:N)")]
pub struct BadSlice {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub detail: String,
}

impl Slice {
    /// Reads a slice as written on the command line and shown by [`fmt::Display`]:
    /// `full`, `meta`, `paths:GLOB[,GLOB…]` or `recent:N` (N at least 1).
    pub fn parse(text: &str) -> Result<Slice, BadSlice> {
        let bad = |detail: &str| BadSlice {
            text: text.to_string(),
            detail: detail.to_string(),
        };
        let slice = match text.split_once(':') {
            None if text == "full" => Slice::Full,
            None if text == "meta" => Slice::Meta,
            Some(("paths", globs)) => {
                let globs: Vec<String> = globs
                    .split(',')
                    .map(|g| g.trim().trim_matches('/').to_string())
                    .filter(|g| !g.is_empty())
                    .collect();
                if globs.is_empty() {
                    return Err(bad("no glob given"));
                }
                Slice::Paths(globs)
            }
            Some(("recent", n)) => match n.trim().parse::<u32>() {
                Ok(n) if n > 0 => Slice::Recent(n),
                _ => return Err(bad("N must be a whole number of commits, at least 1")),
            },
            _ => return Err(bad("unknown kind")),
        };
        slice.paths_filter().map_err(|e| bad(&e))?;
        Ok(slice)
    }

    /// Whether this replica keeps all file data (the default).
    pub fn is_full(&self) -> bool {
        *self == Slice::Full
    }

    /// Which paths' data this slice keeps, whatever the commit (for
    /// `recent:N`, in the commits it keeps data of).
    pub fn paths_filter(&self) -> Result<PathFilter, String> {
        Ok(match self {
            Slice::Full | Slice::Recent(_) => PathFilter::All,
            Slice::Meta => PathFilter::Nothing,
            Slice::Paths(globs) => {
                let mut set = globset::GlobSetBuilder::new();
                for g in globs {
                    // A glob naming a directory keeps everything under it.
                    for pattern in [g.clone(), format!("{g}/**")] {
                        set.add(
                            globset::GlobBuilder::new(&pattern)
                                .build()
                                .map_err(|e| e.to_string())?,
                        );
                    }
                }
                PathFilter::Globs(set.build().map_err(|e| e.to_string())?)
            }
        })
    }

    /// The number of recent commits of each branch whose data is kept, if that is the rule.
    pub fn recent(&self) -> Option<usize> {
        match self {
            Slice::Recent(n) => Some(*n as usize),
            _ => None,
        }
    }
}

impl fmt::Display for Slice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slice::Full => write!(f, "full"),
            Slice::Meta => write!(f, "meta"),
            Slice::Paths(globs) => write!(f, "paths:{}", globs.join(",")),
            Slice::Recent(n) => write!(f, "recent:{n}"),
        }
    }
}

/// A compiled path rule of a slice.
#[derive(Clone, Debug)]
pub enum PathFilter {
    /// Every path.
    All,
    /// No path.
    Nothing,
    /// The paths matching any glob (or under a folder one matches).
    Globs(globset::GlobSet),
}

/// The files that carry the repository's own rules (what is ignored, what
/// is lockable): every slice keeps their data, so a partial replica
/// applies the rules a full one does.
pub const RULE_FILES: [&str; 2] = [".dmvignore", ".dmvattributes"];

/// Whether `path` ('/'-separated bytes) is one of the [`RULE_FILES`], in any folder.
pub fn is_rule_file(path: &[u8]) -> bool {
    let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
    RULE_FILES.iter().any(|r| r.as_bytes() == name)
}

impl PathFilter {
    /// Whether the data of `path` ('/'-separated bytes) is kept: a rule
    /// file's always (see [`RULE_FILES`]).
    pub fn keeps(&self, path: &[u8]) -> bool {
        if is_rule_file(path) {
            return true;
        }
        match self {
            PathFilter::All => true,
            PathFilter::Nothing => false,
            PathFilter::Globs(set) => {
                set.is_match(std::path::Path::new(std::ffi::OsStr::from_bytes(path)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slice_keeps_the_rule_files() {
        for slice in ["meta", "paths:photos", "recent:1", "full"] {
            let filter = Slice::parse(slice).unwrap().paths_filter().unwrap();
            for path in [
                ".dmvignore",
                ".dmvattributes",
                "raw/.dmvignore",
                "a/b/.dmvattributes",
            ] {
                assert!(filter.keeps(path.as_bytes()), "{slice} keeps {path}");
            }
            for path in ["x.dmvignore", ".dmvignore/x", "raw/dmvattributes"] {
                // recent:N keeps every path of the commits it keeps.
                assert_eq!(
                    filter.keeps(path.as_bytes()),
                    slice == "full" || slice == "recent:1",
                    "{slice}: {path} is no rule file"
                );
            }
        }
    }

    #[test]
    fn slices_parse_and_print_back() {
        for text in ["full", "meta", "paths:photos/2024,*.txt", "recent:3"] {
            assert_eq!(Slice::parse(text).unwrap().to_string(), text);
        }
        for bad in ["", "half", "paths:", "recent:0", "recent:x", "paths:[a"] {
            assert!(Slice::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_paths_glob_keeps_what_it_names_and_what_is_under_a_directory_it_names() {
        let f = Slice::parse("paths:photos/2024,*.txt")
            .unwrap()
            .paths_filter()
            .unwrap();
        assert!(
            f.keeps(b"photos/2024/a.jpg")
                && f.keeps(b"photos/2024")
                && f.keeps(b"notes.txt")
                && f.keeps(b"deep/down/notes.txt")
        );
        assert!(
            !f.keeps(b"photos/2023/a.jpg") && !f.keeps(b"photos/20245/a.jpg") && !f.keeps(b"a.jpg")
        );
        assert!(
            !Slice::Meta.paths_filter().unwrap().keeps(b"a")
                && Slice::Full.paths_filter().unwrap().keeps(b"a")
        );
    }

    #[test]
    fn the_config_encoding_is_pinned() {
        let text = serde_json::to_string(&[
            Slice::Full,
            Slice::Meta,
            Slice::Paths(vec!["a/*".into()]),
            Slice::Recent(2),
        ])
        .unwrap();
        assert_eq!(text, r#"["full","meta",{"paths":["a/*"]},{"recent":2}]"#);
    }
}
