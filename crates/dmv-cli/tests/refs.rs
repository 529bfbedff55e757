//! Ref plumbing and the ref store through the real binary.

use crate::common;
use common::*;

use std::io::Write;
use std::process::Stdio;

fn head_id(d: &std::path::Path) -> String {
    dmv(d, &["show-ref", "refs/heads/main"])
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

fn update_ref_stdin(d: &std::path::Path, input: &str) -> std::process::Output {
    let mut child = dmv_cmd(d)
        .args(["update-ref", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn batch_create_list_delete_and_cas() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("f"), "x").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    let id = head_id(d);
    let mut input = String::from("start\n");
    for i in 0..10_000 {
        input.push_str(&format!("create refs/tags/t/{i:05} {id}\n"));
    }
    input.push_str("commit\n");
    let out = update_ref_stdin(d, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(dmv(d, &["show-ref", "--tags"]).lines().count(), 10_000);
    assert_eq!(
        dmv(d, &["show-ref", "refs/tags/t/04242"]).trim(),
        format!("{id} refs/tags/t/04242")
    );
    // a/b and a/b/c may both exist.
    dmv(d, &["update-ref", "refs/heads/a/b", &id]);
    dmv(d, &["update-ref", "refs/heads/a/b/c", &id]);
    assert_eq!(dmv(d, &["show-ref", "--heads"]).lines().count(), 3);

    // One bad line and nothing of the batch is applied.
    let out = update_ref_stdin(
        d,
        &format!("delete refs/tags/t/00001\ncreate refs/tags/t/00002 {id}\n"),
    );
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("refs/tags/t/00002"),
        "{}",
        stderr(&out)
    );
    assert!(dmv_out(d, &["show-ref", "refs/tags/t/00001"])
        .status
        .success());

    // Compare-and-swap: deleting with a wrong expected value is refused.
    let zero = "0".repeat(64);
    let other = "1".repeat(64);
    let out = dmv_out(d, &["update-ref", "-d", "refs/tags/t/00003", &other]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("refs/tags/t/00003"),
        "{}",
        stderr(&out)
    );
    dmv(d, &["update-ref", "-d", "refs/tags/t/00003", &id]);
    assert_eq!(
        dmv_out(d, &["show-ref", "refs/tags/t/00003"]).status.code(),
        Some(1)
    );
    let out = dmv_out(d, &["update-ref", "refs/heads/new", &id, &zero]);
    assert!(out.status.success(), "{}", stderr(&out));
    for bad in [
        "refs/heads/a..b",
        "refs/heads/sp ace",
        "refs/heads/x.lock",
        "refs/heads/ctl\u{1}",
        "refs/heads/",
        "",
    ] {
        let out = dmv_out(d, &["update-ref", bad, &id]);
        assert_eq!(out.status.code(), Some(128), "{bad:?} must be refused");
    }
    assert!(dmv_out(d, &["fsck"]).status.success());
}

#[test]
fn reflog_survives_branch_deletion_and_fsck_names_a_damaged_table() {
    let repo = new_repo();
    let d = repo.path();
    std::fs::write(d.join("f"), "1").unwrap();
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "one"]);
    dmv(d, &["switch", "-c", "topic"]);
    std::fs::write(d.join("f"), "2").unwrap();
    dmv(d, &["commit", "-a", "-m", "two on topic"]);
    dmv(d, &["switch", "main"]);
    dmv(d, &["branch", "-D", "topic"]);
    let log = dmv(d, &["reflog", "topic"]);
    assert!(
        log.contains("two on topic") && log.contains("(deleted)"),
        "{log}"
    );

    let refs = d.join(".dmv/refs");
    // A small transaction's table travels inside tables.list: damage there is named after the list.
    let list = refs.join("tables.list");
    let text = std::fs::read(&list).unwrap();
    let at = text
        .windows(8)
        .position(|w| w == b"\ninline ")
        .expect("a table inline in the list")
        + 20;
    let mut bytes = text.clone();
    bytes[at] ^= 0x01;
    std::fs::write(&list, bytes).unwrap();
    let out = dmv_out(d, &["fsck"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out)).contains("tables.list"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&list, text).unwrap();
    // Enough branches make a table too large for the list: a file of its own.
    for i in 0..20 {
        dmv(d, &["branch", &format!("b{i}")]);
    }
    let table = std::fs::read_dir(&refs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ref"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&table).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&table, bytes).unwrap();
    let out = dmv_out(d, &["fsck"]);
    assert_ne!(out.status.code(), Some(0));
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        all.contains(table.file_name().unwrap().to_str().unwrap()),
        "{all}"
    );
}
