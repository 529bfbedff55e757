//! The line merge of text files against `git merge-file` on random
//! versions of a file: the same bytes, the same verdict.

use dmv_repo::line_merge::{merge_lines_with, ConflictStyle, LineDiff, MarkerLabels};
use proptest::prelude::*;

const LABELS: MarkerLabels<'static> = MarkerLabels {
    ours: "HEAD",
    base: "1234567",
    theirs: "feature",
};

/// What `git merge-file` makes of the same three files: (bytes, conflicted).
fn git_merge_file(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    style: ConflictStyle,
) -> (Vec<u8>, bool) {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("base", base), ("ours", ours), ("theirs", theirs)] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(dir.path()).args([
        "merge-file",
        "-p",
        "-L",
        "HEAD",
        "-L",
        "1234567",
        "-L",
        "feature",
    ]);
    if style == ConflictStyle::Diff3 {
        cmd.arg("--diff3");
    }
    let out = cmd
        .args(["ours", "base", "theirs"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.path())
        .output()
        .expect("git runs");
    let code = out.status.code().expect("git exits");
    assert!(
        (0..128).contains(&code),
        "git merge-file failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, code > 0)
}

/// A side's version of `base` (lines b0, b1, …): each base line kept,
/// dropped or replaced, and lines inserted. New lines are the side's own
/// (o1…, t1…) or shared ones (s1…) both sides may write; none twice on
/// one side, so every diff has one answer and any difference from git
/// is in the merge rules, not in how two diff programs break ties.
fn side(base: usize, prefix: char) -> impl Strategy<Value = Vec<String>> {
    (
        proptest::collection::vec(0u8..8, base),
        proptest::collection::vec(0u8..6, base + 1),
    )
        .prop_map(move |(fates, inserts)| {
            let mut out = Vec::new();
            let mut new = 0;
            let mut fresh = |shared: bool| {
                new += 1;
                if shared {
                    format!("s{}", new % 3)
                } else {
                    format!("{prefix}{new}")
                }
            };
            for (i, insert) in inserts.iter().enumerate() {
                if *insert >= 4 {
                    out.push(fresh(*insert == 5));
                }
                if let Some(fate) = fates.get(i) {
                    match fate {
                        0 => {}
                        1 => out.push(fresh(false)),
                        2 => out.push(fresh(true)),
                        _ => out.push(format!("b{i}")),
                    }
                }
            }
            out.dedup();
            let mut seen = std::collections::HashSet::new();
            out.retain(|l| seen.insert(l.clone()));
            out
        })
}

fn text(lines: &[String], final_newline: bool) -> Vec<u8> {
    let mut t = lines.join("\n");
    if final_newline && !lines.is_empty() {
        t.push('\n');
    }
    t.into_bytes()
}

fn three_versions() -> impl Strategy<Value = (Vec<String>, Vec<String>, Vec<String>)> {
    (0usize..10).prop_flat_map(|n| {
        (
            Just((0..n).map(|i| format!("b{i}")).collect::<Vec<_>>()),
            side(n, 'o'),
            side(n, 't'),
        )
    })
}

proptest! {
    // Enough cases to meet conflicts exactly three lines apart.
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]
    #[test]
    fn merges_as_git_merge_file_does(
        (base, ours, theirs) in three_versions(),
        newlines in any::<(bool, bool, bool)>(),
        diff3 in any::<bool>(),
    ) {
        let style = if diff3 { ConflictStyle::Diff3 } else { ConflictStyle::Merge };
        let (b, o, t) = (text(&base, newlines.0), text(&ours, newlines.1), text(&theirs, newlines.2));
        // `git merge-file` diffs with Myers, as the merge is told to here.
        let ours_merge = merge_lines_with(&b, &o, &t, &LABELS, style, LineDiff::Myers);
        let (git, git_conflicted) = git_merge_file(&b, &o, &t, style);
        prop_assert_eq!(String::from_utf8_lossy(&ours_merge.bytes), String::from_utf8_lossy(&git));
        prop_assert_eq!(ours_merge.conflicted, git_conflicted);
    }
}
