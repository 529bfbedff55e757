//! Which Git commit became which DMV commit, and where each imported ref
//! was left: `.dmv/git-import`, so running the import again converts only
//! new commits and moves only refs nobody moved since.
//!
//! Text, one record a line: `commit GITHEX DMVHEX` or `ref NAME DMVHEX`.

use std::collections::HashMap;
use std::path::Path;

use dmv_repo::store::ObjectId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportMap {
    pub commits: HashMap<String, ObjectId>,
    pub refs: HashMap<String, ObjectId>,
}

impl ImportMap {
    pub fn parse(text: &str) -> Result<ImportMap, String> {
        let mut map = ImportMap::default();
        for (n, line) in text.lines().enumerate() {
            let bad = || {
                format!(
                    "line {}: {line:?} is not `commit GIT DMV` or `ref NAME DMV`",
                    n + 1
                )
            };
            let mut words = line.split(' ');
            let (kind, key, value) = (words.next(), words.next(), words.next());
            let (Some(kind), Some(key), Some(value), None) = (kind, key, value, words.next())
            else {
                return Err(bad());
            };
            let id = ObjectId::from_hex(value).ok_or_else(bad)?;
            match kind {
                "commit" if key.len() == 40 && key.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    map.commits.insert(key.to_string(), id)
                }
                "ref" if key.starts_with("refs/") => map.refs.insert(key.to_string(), id),
                _ => return Err(bad()),
            };
        }
        Ok(map)
    }

    /// Sorted, so the file is the same whatever order the work was done in.
    pub fn encode(&self) -> String {
        let mut commits: Vec<_> = self.commits.iter().collect();
        commits.sort();
        let mut refs: Vec<_> = self.refs.iter().collect();
        refs.sort();
        let mut out = String::new();
        for (git, dmv) in commits {
            out.push_str(&format!("commit {git} {}\n", dmv.to_hex()));
        }
        for (name, dmv) in refs {
            out.push_str(&format!("ref {name} {}\n", dmv.to_hex()));
        }
        out
    }

    pub fn load(path: &Path) -> Result<ImportMap, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => ImportMap::parse(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ImportMap::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_encoding_is_pinned() {
        let mut m = ImportMap::default();
        m.commits.insert("a".repeat(40), ObjectId([1; 32]));
        m.refs.insert("refs/heads/main".into(), ObjectId([2; 32]));
        let text = m.encode();
        assert_eq!(
            text,
            format!(
                "commit {} {}\nref refs/heads/main {}\n",
                "a".repeat(40),
                "01".repeat(32),
                "02".repeat(32)
            )
        );
        assert_eq!(ImportMap::parse(&text).unwrap(), m);
        for bad in [
            "commit abc 00",
            "ref main 0101",
            "tree x y",
            "commit",
            &format!("commit {} {} extra", "a".repeat(40), "01".repeat(32)),
        ] {
            assert!(ImportMap::parse(bad).is_err(), "{bad}");
        }
    }
}
