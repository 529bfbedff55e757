//! Damaged repositories: fsck names the damage, other commands fail cleanly.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

fn pack_files(d: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn no_panic(o: &std::process::Output) {
    assert_ne!(o.status.code(), Some(101), "panicked: {}", stderr(o));
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

/// A repository with one committed 2 MiB clip, and the pack holding it.
fn committed_clip() -> (tempfile::TempDir, std::path::PathBuf) {
    let repo = new_repo();
    let d = repo.path();
    write_noise(&d.join("clip.mov"), 2 << 20, 9);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "clip"]);
    let pack = pack_files(d, "pack")
        .into_iter()
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    (repo, pack)
}

#[test]
fn flipped_byte_in_a_pack_is_named_by_fsck_and_fails_reads_cleanly() {
    let (repo, pack) = committed_clip();
    let d = repo.path();
    let pack_name = pack.file_name().unwrap().to_string_lossy().into_owned();
    flip(&pack, 1 << 20);

    let fsck = dmv_out(d, &["fsck"]);
    no_panic(&fsck);
    assert_eq!(fsck.status.code(), Some(1));
    let report = String::from_utf8_lossy(&fsck.stdout);
    assert!(
        report.contains(&pack_name) && report.contains("does not hash to its id"),
        "{report}"
    );
    let full = dmv_out(d, &["fsck", "--full"]);
    let full_report = String::from_utf8_lossy(&full.stdout);
    assert!(
        full_report.contains(&pack_name) && full_report.contains("does not hash to its id"),
        "{full_report}"
    );

    let cat = dmv_out(d, &["cat", "HEAD:clip.mov"]);
    no_panic(&cat);
    assert_eq!(cat.status.code(), Some(128));
    let err = stderr(&cat);
    assert!(
        err.contains("object ") && err.contains(&pack_name) && err.lines().count() == 1,
        "{err}"
    );

    std::fs::remove_file(d.join("clip.mov")).unwrap();
    let restore = dmv_out(d, &["restore", "clip.mov"]);
    no_panic(&restore);
    assert_eq!(restore.status.code(), Some(128));
    assert!(
        !d.join("clip.mov").exists(),
        "a damaged file must not be written out"
    );
}

/// The pack checksum covers what no object id does: a byte of the table of
/// contents or of a record header that no reader looks at (a reserved
/// field) is still caught.
#[test]
fn flipped_reserved_byte_in_a_pack_fails_the_checksum() {
    for what in ["table of contents", "record header"] {
        let (repo, pack) = committed_clip();
        let d = repo.path();
        let bytes = std::fs::read(&pack).unwrap();
        let footer = bytes.len() - 56;
        let toc_offset = u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap());
        // The first entry of either: kind, compression, reserved [2]; the first record is at 16.
        flip(
            &pack,
            if what == "record header" {
                16 + 2
            } else {
                toc_offset + 2
            },
        );

        assert!(
            dmv_out(d, &["fsck"]).status.success(),
            "{what}: objects are intact: the quick fsck passes"
        );
        let full = dmv_out(d, &["fsck", "--full"]);
        no_panic(&full);
        assert_eq!(full.status.code(), Some(1), "{what}");
        let report = String::from_utf8_lossy(&full.stdout);
        assert!(
            report.contains("checksum mismatch")
                && report.contains(&pack.file_name().unwrap().to_string_lossy().into_owned()),
            "{what}: {report}"
        );
    }
}

#[test]
fn damaged_index_dirstate_and_truncated_pack_give_one_line_errors() {
    use common::remote::one_line_error;
    let repo = new_repo();
    let d = repo.path();
    write_noise(&d.join("a"), 300_000, 1);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "a"]);
    let idx = pack_files(d, "idx")
        .into_iter()
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let idx_name = idx.file_name().unwrap().to_string_lossy().into_owned();
    flip(&idx, 40);
    let out = dmv_out(d, &["fsck", "--full"]);
    no_panic(&out);
    assert_ne!(out.status.code(), Some(0));
    // A damaged index is a finding (exit 1) naming the file, not a crash.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&idx_name) && report.contains("checksum mismatch"),
        "{report}"
    );
    // Reading the file through it fails with one line.
    let out = dmv_out(d, &["cat", "HEAD:a"]);
    no_panic(&out);
    one_line_error(&out);

    let repo2 = new_repo();
    let d2 = repo2.path();
    write_noise(&d2.join("a"), 300_000, 1);
    dmv(d2, &["add", "."]);
    dmv(d2, &["commit", "-m", "a"]);
    let pack = pack_files(d2, "pack")
        .into_iter()
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let pack_name = pack.file_name().unwrap().to_string_lossy().into_owned();
    let f = std::fs::OpenOptions::new().write(true).open(&pack).unwrap();
    f.set_len(1000).unwrap();
    // The truncated pack holds the file's chunks; commits and trees are in
    // another pack, so log and status (which read no chunk) still work.
    let expected: &[(&[&str], i32)] = &[
        (&["cat", "HEAD:a"], 128),
        (&["fsck"], 1),
        (&["fsck", "--full"], 1),
        (&["log"], 0),
        (&["status"], 0),
        (&["gc"], 128),
    ];
    for (args, code) in expected {
        let out = dmv_out(d2, args);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {}", stderr(&out));
        match code {
            128 => {
                let line = one_line_error(&out);
                assert_eq!(
                    stderr(&out)
                        .lines()
                        .filter(|l| l.starts_with("dmv:"))
                        .count(),
                    1,
                    "{args:?}: {}",
                    stderr(&out)
                );
                assert!(
                    line.contains(&pack_name) && line.contains("damaged"),
                    "{args:?}: {line}"
                );
            }
            1 => {
                // fsck: the findings on stdout, a one-line summary on stderr.
                let report = String::from_utf8_lossy(&out.stdout);
                assert!(
                    report.contains(&pack_name) && report.contains("damaged"),
                    "{args:?}: {report}"
                );
                assert_eq!(
                    stderr(&out).lines().count(),
                    1,
                    "{args:?}: {}",
                    stderr(&out)
                );
            }
            _ => assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out)),
        }
    }
    assert_eq!(dmv_out(d2, &["fsck"]).status.code(), Some(1));

    std::fs::write(
        d2.join(".dmv/dirstate"),
        b"DMVDIRS\0garbage that is not a dirstate at all........",
    )
    .unwrap();
    let out = dmv_out(d2, &["status"]);
    no_panic(&out);
    assert!(
        stderr(&out).contains("dirstate") && stderr(&out).contains("corrupt"),
        "{}",
        stderr(&out)
    );
    let line = one_line_error(&out);
    assert!(
        line.contains("dirstate") && line.contains("corrupt"),
        "{line}"
    );
}

#[test]
fn gc_drops_unreachable_history_and_keeps_the_rest() {
    let repo = new_repo();
    let d = repo.path();
    write_noise(&d.join("keep.bin"), 3 << 20, 1);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "keep"]);
    dmv(d, &["switch", "-c", "experiment"]);
    write_noise(&d.join("throwaway.bin"), 8 << 20, 2);
    dmv(d, &["add", "."]);
    dmv(d, &["commit", "-m", "throwaway"]);
    dmv(d, &["switch", "main"]);
    dmv(d, &["branch", "-D", "experiment"]);
    let before = bytes_under(&d.join(".dmv/objects/packs"));
    // The reflog still remembers the deleted branch: a plain gc keeps its data.
    dmv(d, &["gc", "--prune=now"]);
    assert!(dmv_out(d, &["fsck"]).status.success());
    assert!(before.saturating_sub(bytes_under(&d.join(".dmv/objects/packs"))) < 1 << 20);
    // Packs this young are kept whole by default (an unfinished transfer may need them).
    let out = dmv(d, &["gc", "--prune-reflog", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["objects_dropped"].as_u64(), Some(0), "{out}");
    assert!(report["recent_packs_kept"].as_u64().unwrap() > 0, "{out}");
    let out = dmv(d, &["gc", "--prune-reflog", "--prune=now", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let after = bytes_under(&d.join(".dmv/objects/packs"));
    assert!(report["objects_dropped"].as_u64().unwrap() > 100, "{out}");
    assert!(
        before - after > 8 << 20,
        "gc freed {} bytes",
        before - after
    );
    assert_eq!(
        dmv_out(d, &["cat", "HEAD:keep.bin"]).stdout,
        std::fs::read(d.join("keep.bin")).unwrap()
    );
    assert!(dmv_out(d, &["fsck", "--full"]).status.success());
    let stats: serde_json::Value = serde_json::from_str(&dmv(d, &["stats", "--json"])).unwrap();
    assert_eq!(stats["packs"], 1);
    assert_eq!(stats["commits"], 1);
}
