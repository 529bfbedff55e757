//! Every request to the object store goes through `src/objects.rs` (issue
//! 68: an encrypted remote changes keys and bodies there alone), checked on
//! the source: no other file names opendal's `Operator`, its readers,
//! writers, listings or metadata, reaches the connection's clients
//! (`conn.op`, `conn.upload_op`), or calls a method only the client has.
//! `url.rs` builds the clients, so it is exempt; opendal's `Error`,
//! `ErrorKind` and `Result` may be named anywhere (callers sort failures).
//!
//! A source scan, not type checking: a line comment is skipped, and a call
//! renamed through a helper is not seen. It catches the ordinary slip of
//! cloning `conn.op` into a new function.

use std::path::Path;

/// The files allowed to talk to the store's client directly.
const EXEMPT: &[&str] = &["objects.rs", "url.rs"];

/// Text no other file may contain: the client, its types, and methods that
/// only the client and its builders have (the `Objects` methods are named
/// otherwise, or share a name and are called on an `Objects`).
const FORBIDDEN: &[&str] = &[
    "Operator",
    "upload_op",
    ".op.",
    ".op,",
    ".op)",
    ".op;",
    "read_with(",
    "reader_with(",
    ".reader(",
    "write_with(",
    "writer_with(",
    ".writer(",
    "list_with(",
    "lister(",
    "lister_with(",
    "stat_with(",
    "delete_with(",
    "delete_iter(",
    "remove_all(",
    ".if_match(",
    ".if_none_match(",
    ".if_not_exists(",
    "content_length()",
    ".etag()",
    ".metadata()",
];

/// What another file may name of opendal: its errors.
const ALLOWED_OPENDAL: &[&str] = &["Error", "ErrorKind", "Result"];

/// Each forbidden use in `source`, as "line N: what".
fn violations(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for bad in FORBIDDEN {
            if code.contains(bad) {
                found.push(format!("line {}: {bad:?} in {:?}", n + 1, line.trim()));
            }
        }
        let mut rest = code;
        while let Some(at) = rest.find("opendal::") {
            rest = &rest[at + "opendal::".len()..];
            let named: Vec<&str> = match rest.strip_prefix('{') {
                Some(list) => list
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")],
            };
            for name in named.into_iter().filter(|n| !n.is_empty()) {
                if !ALLOWED_OPENDAL.contains(&name) {
                    found.push(format!(
                        "line {}: opendal::{name} in {:?}",
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn only_objects_rs_talks_to_the_store() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        if EXEMPT.contains(&name.as_str()) {
            // The scan must recognise the real thing, or it proves nothing.
            assert!(
                !violations(&source).is_empty(),
                "{name} holds the client, yet the scan sees nothing there: update FORBIDDEN"
            );
            continue;
        }
        failures.extend(
            violations(&source)
                .into_iter()
                .map(|v| format!("src/{name}: {v}")),
        );
        checked.push(name);
    }
    for expected in ["lib.rs", "read.rs", "upload.rs", "refswap.rs", "mirror.rs"] {
        assert!(
            checked.iter().any(|c| c == expected),
            "src/{expected} was not scanned (checked {checked:?})"
        );
    }
    assert!(
        failures.is_empty(),
        "requests to the object store belong in src/objects.rs (the one place an encrypted \
         remote changes keys and bodies); move these there:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_scan_sees_the_ways_a_file_could_reach_the_store() {
    let bad = [
        "use opendal::Operator;",
        "use opendal::{ErrorKind, Operator};",
        "let op = conn.op.clone();",
        "conn.upload_op.clone(),",
        "op.read_with(&key).range(0..len).await",
        "op.write_with(&key, bytes).if_not_exists(true).await",
        "let mut writer = op.writer_with(&key).await?;",
        "let entries = op.list_with(PACKS_PREFIX).await?;",
        "Ok(meta) if meta.content_length() > MAX => {}",
        "let b = opendal::Buffer::new();",
        "async fn f(w: opendal::Writer) {}",
    ];
    for line in bad {
        assert!(!violations(line).is_empty(), "not caught: {line}");
    }
    let fine = [
        "use opendal::ErrorKind;",
        "Err(e) if e.kind() == opendal::ErrorKind::NotFound => continue,",
        "let fail = |e: opendal::Error| target.classify(e, \"uploading\");",
        "let objects = Objects::of(conn);",
        "objects.delete(&key).await",
        "let bytes = objects.get_range(&key, 0..len).await?;",
        "// op.read_with(&key) in a comment",
        "let written = objects.swap(REFS_KEY, bytes, etag.as_deref()).await;",
    ];
    for line in fine {
        assert_eq!(violations(line), Vec::<String>::new(), "{line}");
    }
}
