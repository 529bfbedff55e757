//! Names a file system folds into one. On a file system that ignores case
//! (Windows, macOS by default, FAT) `Photo.jpg` and `photo.jpg` are one
//! file; on one that normalizes Unicode (macOS) so are `é` written as one
//! code point (NFC) and as `e` and an accent (NFD). A tree holding both
//! names of such a pair cannot be checked out there without one file
//! overwriting the other, so the checkout is refused before it writes
//! anything, naming both: the rule is "never lose either", and renaming
//! one is a decision for a person on a replica that tells them apart.
//! How the working tree's file system folds is found by trying it, in
//! `.dmv/`, at each checkout (two files made and removed).
//!
//! Windows also refuses some names outright: devices (`CON`, `AUX`,
//! `NUL`, `COM1`, with any extension), names ending in a dot or a space
//! (which it drops, folding `a.` into `a`), and `<>:"|?*\`. A checkout on
//! Windows of a tree holding one is refused the same way, naming it, as
//! git's `core.protectNTFS` refuses them.

use std::collections::HashMap;

use dmv_store::object::EntryKind;
use dmv_store::ObjectId;
use unicode_normalization::UnicodeNormalization;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::read_dir;
use crate::paths::show;
use crate::repository::repo::Repository;

/// What a file system takes to be the same name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Folding {
    /// `A` and `a` are one name.
    pub case: bool,
    /// NFC and NFD spellings are one name.
    pub normalization: bool,
    /// Windows's rules for names apply (see [`windows_name_problem`]).
    pub windows: bool,
}

impl Folding {
    /// The one name `name` is to this file system.
    pub fn key(self, name: &[u8]) -> Vec<u8> {
        let Ok(text) = std::str::from_utf8(name) else {
            return name.to_vec();
        };
        let text: String = if self.normalization {
            text.nfc().collect()
        } else {
            text.to_string()
        };
        if self.case {
            text.to_lowercase().into_bytes()
        } else {
            text.into_bytes()
        }
    }

    fn words(self) -> &'static str {
        match (self.case, self.normalization) {
            (true, true) => "case and Unicode normalization",
            (true, false) => "case",
            _ => "Unicode normalization",
        }
    }
}

impl Repository {
    /// How the file system of the working tree folds names, found by
    /// making a file in `.dmv/` and looking for it under another spelling.
    pub(crate) fn name_folding(&self) -> RepoResult<Folding> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let stamp = format!("{}-{nanos}", std::process::id());
        let probe = |made: String, other: String| -> RepoResult<bool> {
            let path = self.dmv.join(&made);
            // A name the file system refuses (FAT and some accents) cannot be checked out at all.
            if std::fs::write(&path, b"").is_err() {
                return Ok(false);
            }
            let folded = made != other && self.dmv.join(&other).exists();
            let _ = std::fs::remove_file(&path);
            Ok(folded)
        };
        Ok(Folding {
            case: probe(format!("Case-Probe-{stamp}"), format!("case-probe-{stamp}"))?,
            normalization: probe(
                format!("nfd-e\u{301}-{stamp}"),
                format!("nfd-\u{e9}-{stamp}"),
            )?,
            windows: cfg!(windows),
        })
    }

    /// Refuses a checkout of `target` that would fold two names of one
    /// folder into one file on this working tree's file system.
    pub(crate) fn refuse_folded_names(&self, target: &ObjectId) -> RepoResult<()> {
        let folding = self.name_folding()?;
        if folding == Folding::default() {
            return Ok(());
        }
        let mut folders = vec![(Vec::new(), *target)];
        while let Some((path, tree)) = folders.pop() {
            let mut seen: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for e in read_dir(&self.store, &tree)? {
                let full = if path.is_empty() {
                    e.name.clone()
                } else {
                    [path.as_slice(), b"/", &e.name].concat()
                };
                if let Some(problem) = windows_name_problem(&e.name).filter(|_| folding.windows) {
                    return Err(RepoError::UnfitName {
                        path: show(&full),
                        problem,
                    });
                }
                if let Some(first) = seen.insert(folding.key(&e.name), full.clone()) {
                    return Err(RepoError::FoldedNames {
                        first: show(&first),
                        second: show(&full),
                        folds: folding.words(),
                    });
                }
                if e.kind == EntryKind::Dir {
                    folders.push((full, e.id));
                }
            }
        }
        Ok(())
    }
}

/// Why Windows cannot hold a file or folder of this name, if it cannot.
pub fn windows_name_problem(name: &[u8]) -> Option<String> {
    let Ok(name) = std::str::from_utf8(name) else {
        return Some("is not UTF-8, and Windows names are Unicode".into());
    };
    if let Some(c) = name
        .chars()
        .find(|c| "<>:\"|?*\\".contains(*c) || c.is_control())
    {
        return Some(format!(
            "holds {c:?}, which Windows does not allow in a name"
        ));
    }
    if name.ends_with(['.', ' ']) {
        return Some("ends in a dot or a space, which Windows drops from a name".into());
    }
    // The device names, whatever follows a dot and whatever their case.
    let stem = name
        .split('.')
        .next()
        .unwrap_or(name)
        .trim_end_matches(' ')
        .to_ascii_uppercase();
    let numbered = |prefix: &str| {
        stem.strip_prefix(prefix)
            .is_some_and(|n| n.len() == 1 && n.as_bytes()[0].is_ascii_digit() && n != "0")
    };
    if ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"].contains(&stem.as_str())
        || numbered("COM")
        || numbered("LPT")
    {
        return Some(format!("is {stem}, a name Windows keeps for a device"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_windows_cannot_hold_are_told_apart_from_those_it_can() {
        for bad in [
            "CON",
            "con.txt",
            "Aux.Photo.jpg",
            "NUL",
            "com1.raw",
            "LPT9",
            "nul .txt",
            "a.",
            "b ",
            "a:b",
            "what?",
            "x|y",
            "tab\there",
            "back\\slash",
        ] {
            assert!(windows_name_problem(bad.as_bytes()).is_some(), "{bad}");
        }
        for good in [
            "CONTRACT.pdf",
            "console",
            "com10",
            "COM0",
            "lpt",
            "auxiliary.wav",
            ".hidden",
            "a.b",
            "Café.jpg",
            "名前.png",
        ] {
            assert_eq!(windows_name_problem(good.as_bytes()), None, "{good}");
        }
        assert!(windows_name_problem(&[0xff, b'a']).is_some());
        assert_eq!(
            windows_name_problem(b"AUX.jpg").unwrap(),
            "is AUX, a name Windows keeps for a device"
        );
    }

    #[test]
    fn names_fold_as_the_file_system_says() {
        let both = Folding {
            case: true,
            normalization: true,
            windows: false,
        };
        assert_eq!(both.key(b"Photo.JPG"), both.key(b"photo.jpg"));
        assert_eq!(
            both.key("Caf\u{e9}.jpg".as_bytes()),
            both.key("cafe\u{301}.jpg".as_bytes())
        );
        let case = Folding {
            case: true,
            normalization: false,
            windows: false,
        };
        assert_ne!(
            case.key("caf\u{e9}".as_bytes()),
            case.key("cafe\u{301}".as_bytes())
        );
        let none = Folding::default();
        assert_ne!(none.key(b"A"), none.key(b"a"));
        // Bytes that are not UTF-8 are their own name.
        assert_eq!(both.key(&[0xff, b'A']), vec![0xff, b'A']);
    }

    #[test]
    fn a_case_sensitive_file_system_folds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        // The tests run on Linux's ext4 or tmpfs, which tell both apart.
        assert_eq!(repo.name_folding().unwrap(), Folding::default());
        assert_eq!(
            std::fs::read_dir(&repo.dmv)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains("robe"))
                .count(),
            0,
            "the probes are removed"
        );
    }
}
