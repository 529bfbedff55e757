use crate::RefError;

/// Longest accepted ref name in bytes; keeps keys (and thus blocks) bounded.
pub const MAX_NAME_LEN: usize = 1024;

/// Checks a ref name against DMV's rules. Names never touch the file system,
/// so the rules exist for unambiguous command-line syntax (`~ ^ : @{`), for
/// glob safety (`? * [`), and to keep Git-compatible habits (`.lock`, `..`).
pub fn validate_name(name: &str) -> Result<(), RefError> {
    let bad = |reason: &'static str| {
        Err(RefError::InvalidName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("name is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad("name is longer than 1024 bytes");
    }
    if name.starts_with('/') {
        return bad("name starts with '/'");
    }
    if name.ends_with('/') {
        return bad("name ends with '/'");
    }
    if name.contains("//") {
        return bad("name contains '//'");
    }
    if name.contains("@{") {
        return bad("name contains '@{'");
    }
    for c in name.chars() {
        match c {
            '\u{0}'..='\u{1f}' | '\u{7f}' => return bad("name contains a control character"),
            ' ' => return bad("name contains a space"),
            '~' | '^' | ':' | '?' | '*' | '[' | '\\' => {
                return bad("name contains one of ~ ^ : ? * [ \\")
            }
            _ => {}
        }
    }
    for comp in name.split('/') {
        if comp == "." || comp == ".." {
            return bad("name has a '.' or '..' component");
        }
        if comp.ends_with(".lock") {
            return bad("a name component ends with '.lock'");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_normal_names() {
        for n in [
            "main",
            "refs/heads/main",
            "a/b",
            "a/b/c",
            "refs/tags/v1.0",
            "héllo/wörld",
            "a.b",
            "x.locked",
            "a@b",
            "..a",
        ] {
            assert!(validate_name(n).is_ok(), "{n}");
        }
        assert!(validate_name(&"a".repeat(1024)).is_ok());
    }

    #[test]
    fn refuses_bad_names() {
        for n in [
            "", "/a", "a/", "a//b", ".", "a/./b", "a/../b", "..", "a\u{1}b", "a\u{7f}", "a b",
            "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a.lock", "a.lock/b", "a@{1}", "a\nb",
        ] {
            let e = validate_name(n).unwrap_err();
            assert!(matches!(e, RefError::InvalidName { .. }), "{n}");
            assert!(e.to_string().starts_with("invalid ref name"), "{e}");
        }
        assert!(validate_name(&"a".repeat(1025)).is_err());
    }
}
