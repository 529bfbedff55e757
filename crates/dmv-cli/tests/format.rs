//! The repository's format requirements (`.dmv/requires`): a dmv refuses a
//! repository that needs what it does not know, before touching it.

mod common;

use std::path::Path;

use common::remote::one_line_error;
use common::*;

/// What this dmv lists in every repository it makes.
const ALL: &str = "packs-v2\npacks-v3\ngc-lock-v2\nworktree-lock\nlocations-journal\nrefs-inline\nlocations-packed\nlocations-claims\n";

fn config(d: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(d.join(".dmv/config")).unwrap()).unwrap()
}

#[test]
fn a_new_repository_lists_its_requirements() {
    let repo = new_repo();
    let d = repo.path();
    assert_eq!(
        std::fs::read_to_string(d.join(".dmv/requires")).unwrap(),
        ALL
    );
    assert_eq!(config(d)["format"], 2);
}

#[test]
fn an_unknown_requirement_is_refused_before_anything_is_touched() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "a"]);
    std::fs::write(d.join("b.txt"), "b\n").unwrap();
    let mut requires = std::fs::read_to_string(d.join(".dmv/requires")).unwrap();
    requires.push_str("packs-v9\n");
    std::fs::write(d.join(".dmv/requires"), requires).unwrap();
    let before = file_bytes(&d.join(".dmv"));
    for args in [
        &["status"][..],
        &["log"],
        &["add", "b.txt"],
        &["commit", "-am", "b"],
        &["gc", "--prune=now"],
        &["fsck"],
        &["branch", "x"],
        &["cat", "HEAD:a.txt"],
    ] {
        let line = one_line_error(&dmv_out(d, args));
        assert!(
            line.contains("needs a newer dmv")
                && line.contains("packs-v9")
                && !line.contains("packs-v2"),
            "{args:?}: {line}"
        );
    }
    assert!(
        file_bytes(&d.join(".dmv")) == before,
        "a refused command changed the repository"
    );
    // A clone from it is refused by the serving side, in one line.
    let t = tempfile::tempdir().unwrap();
    let line = one_line_error(&dmv_out(t.path(), &["clone", d.to_str().unwrap(), "copy"]));
    assert!(line.contains("packs-v9"), "{line}");
}

#[test]
fn a_repository_from_before_requirements_is_upgraded_when_opened() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "a"]);
    // As the dmv of format 1 left it.
    std::fs::remove_file(d.join(".dmv/requires")).unwrap();
    edit_config(d, |cfg| cfg["format"] = 1.into());
    assert!(dmv(d, &["log", "--oneline"]).contains(" a"));
    assert_eq!(config(d)["format"], 2);
    assert_eq!(
        std::fs::read_to_string(d.join(".dmv/requires")).unwrap(),
        ALL
    );
    // Format 2 without its list is damage, not an old repository.
    std::fs::remove_file(d.join(".dmv/requires")).unwrap();
    let line = one_line_error(&dmv_out(d, &["status"]));
    assert!(
        line.contains("requires") && line.contains("missing"),
        "{line}"
    );
    // A format this dmv does not know at all.
    edit_config(d, |cfg| cfg["format"] = 3.into());
    let line = one_line_error(&dmv_out(d, &["status"]));
    assert!(line.contains("format 3"), "{line}");
}

#[test]
fn a_repository_of_an_older_dmv_gets_the_full_list_when_opened() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("a.txt"), "a\n").unwrap();
    dmv(d, &["add", "a.txt"]);
    dmv(d, &["commit", "-m", "a"]);
    // As the dmv that wrote packs of version 2 left it: it must not meet version 3.
    std::fs::write(
        d.join(".dmv/requires"),
        "packs-v2\ngc-lock-v2\nworktree-lock\n",
    )
    .unwrap();
    assert!(dmv(d, &["log", "--oneline"]).contains(" a"));
    assert_eq!(
        std::fs::read_to_string(d.join(".dmv/requires")).unwrap(),
        ALL
    );
    dmv(d, &["fsck", "--full"]);
}
