//! No library's message names a `dmv` command or a flag: the libraries say
//! what went wrong in words any front end can show (the web UI, watch
//! mode, an embedder), and the command line adds its own commands as hints
//! (dmv-cli's hints.rs). Checked on the errors' messages (`#[error("…")]`)
//! and on every string literal that quotes a command.

use std::path::Path;

use dmv_testkit::rust_files;

/// The crates whose messages reach a person through some other front end.
const LIBRARIES: &[&str] = &[
    "dmv-os",
    "dmv-store",
    "dmv-refs",
    "dmv-repo",
    "dmv-bucket",
    "dmv-web",
    "dmv-gitimport",
    "dmv-sync",
    "dmv-server",
    "dmv-mount",
    "dmv-watch",
    "dmv-media",
    "dmv-crypt",
    "dmv-agent",
    "dmv-review",
];

/// The string literals of `code` (plain and escaped quotes; raw strings do
/// not hold messages here), each with whether an `#[error(` opens it.
fn literals(code: &str) -> Vec<(String, bool)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            // A comment runs to the end of its line (messages are not in comments).
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' => {
                // A char literal such as '"' (lifetimes have no closing quote nearby).
                if bytes.get(i + 2) == Some(&b'\'') {
                    i += 2;
                } else if bytes.get(i + 1) == Some(&b'\\') && bytes.get(i + 3) == Some(&b'\'') {
                    i += 3;
                }
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let error = code[..start - 1].trim_end().ends_with("#[error(");
                out.push((code[start..i.min(code.len())].to_string(), error));
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Why `text` names a command or a flag, if it does.
fn names_the_cli(text: &str, is_error: bool) -> Option<&'static str> {
    if text.contains("`dmv ") || text.contains("(dmv ") {
        return Some("a dmv command");
    }
    let flag = text
        .split(|c: char| c.is_whitespace() || c == '(')
        .any(|word| {
            word.strip_prefix("--")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_lowercase()))
        });
    (is_error && flag).then_some("a flag")
}

/// The crates whose words are the front end's own, or that only tests use.
const NOT_LIBRARIES: &[&str] = &["dmv-cli", "dmv-testkit", "dmv-fixtures"];

/// A new crate is checked unless it is said to be a front end: the list
/// above missed three crates for a while.
#[test]
fn every_crate_is_checked_or_named_a_front_end() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for entry in std::fs::read_dir(root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            LIBRARIES.contains(&name.as_str()) || NOT_LIBRARIES.contains(&name.as_str()),
            "{name}: add it to LIBRARIES (or, if it is a front end, to NOT_LIBRARIES)"
        );
    }
}

#[test]
fn no_library_message_names_a_command_or_a_flag() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    for library in LIBRARIES {
        let mut files = Vec::new();
        rust_files(&root.join(library).join("src"), &mut files);
        assert!(!files.is_empty(), "{library} has no source files");
        for file in files {
            let code = std::fs::read_to_string(&file).unwrap();
            // The unit tests at a file's end say what they like.
            let code = code
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            for (text, is_error) in literals(code) {
                if let Some(what) = names_the_cli(&text, is_error) {
                    found.push(format!(
                        "{}: names {what}: \"{text}\"",
                        file.strip_prefix(root).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "messages to move into dmv-cli's hints.rs:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_commands_and_flags_in_messages() {
    let code = "#[error(\"use --force\")]\nlet s = \"run `dmv get` now\";\nlet ok = \"--stdio\"; // `dmv x`";
    let seen: Vec<_> = literals(code)
        .into_iter()
        .filter_map(|(t, e)| names_the_cli(&t, e))
        .collect();
    assert_eq!(seen, ["a flag", "a dmv command"]);
}
