//! Git LFS pointers: the small text a Git repository holds in place of a
//! large file, and where Git LFS keeps the file itself
//! (`.git/lfs/objects/AB/CD/ABCD…`).

use std::path::{Path, PathBuf};

/// What a pointer names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LfsPointer {
    /// SHA-256 of the content, lowercase hex.
    pub oid: String,
    /// The content's length in bytes, as the pointer claims (the import
    /// uses a local LFS file only if its length matches).
    pub size: u64,
}

/// Pointers are small: a blob larger than this is content, not a pointer.
pub const MAX_POINTER_BYTES: usize = 1024;

impl LfsPointer {
    /// Reads a pointer (spec v1: `version`, then keys in order, `oid
    /// sha256:HEX` and `size N` among them); anything else is not one.
    pub fn parse(blob: &[u8]) -> Option<LfsPointer> {
        if blob.len() > MAX_POINTER_BYTES {
            return None;
        }
        let text = std::str::from_utf8(blob).ok()?;
        let mut lines = text.lines();
        if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
            return None;
        }
        let (mut oid, mut size) = (None, None);
        for line in lines {
            let (key, value) = line.split_once(' ')?;
            match key {
                "oid" => {
                    let hex = value.strip_prefix("sha256:")?;
                    if hex.len() != 64
                        || !hex
                            .bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    {
                        return None;
                    }
                    oid = Some(hex.to_string());
                }
                "size" => size = Some(value.parse::<u64>().ok()?),
                _ => {}
            }
        }
        Some(LfsPointer {
            oid: oid?,
            size: size?,
        })
    }

    /// Where Git LFS keeps the content in a repository whose Git folder is `git_dir`.
    pub fn object_path(&self, git_dir: &Path) -> PathBuf {
        git_dir
            .join("lfs")
            .join("objects")
            .join(&self.oid[..2])
            .join(&self.oid[2..4])
            .join(&self.oid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OID: &str = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";

    #[test]
    fn pointers_are_read_as_git_lfs_writes_them() {
        let text =
            format!("version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\n");
        let p = LfsPointer::parse(text.as_bytes()).unwrap();
        assert_eq!(
            p,
            LfsPointer {
                oid: OID.into(),
                size: 12345
            }
        );
        assert_eq!(
            p.object_path(Path::new("/r/.git")),
            Path::new("/r/.git/lfs/objects/4d/7a").join(OID)
        );
        for bad in [
            "version https://git-lfs.github.com/spec/v1\nsize 1\n".to_string(),
            format!("version https://git-lfs.github.com/spec/v2\noid sha256:{OID}\nsize 1\n"),
            format!(
                "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 1\n",
                &OID[1..]
            ),
            format!(
                "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 1\n",
                OID.to_uppercase()
            ),
            format!("version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize -1\n"),
            "just a text file\n".to_string(),
        ] {
            assert_eq!(LfsPointer::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_are_a_pointer_or_not_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
            if let Some(p) = LfsPointer::parse(&bytes) {
                prop_assert_eq!(p.oid.len(), 64);
            }
        }
    }
}
