//! `History::log`: each filter of a `LogQuery` on a small history built
//! from objects, the same query the CLI's log and the web UI's history use.

use dmv_repo::store::object::{encode, Commit, EntryKind, Signature};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind};
use dmv_repo::{tree, FlatEntry, LogQuery, Repository};

/// A line of five commits, a minute apart, oldest first: c0 (Ada, adds
/// a.txt), c1 (Bob, changes b.txt), c2 (Ada, changes a.txt), c3 (Bob,
/// renames a.txt to c.txt), c4 (Ada, changes b.txt).
fn history(repo: &Repository) -> Vec<ObjectId> {
    let mut s = repo.store.begin_write().unwrap();
    let mut file = |content: &[u8]| FlatEntry {
        kind: EntryKind::File,
        id: s.put_object(ObjectKind::Chunk, content).unwrap(),
        size: content.len() as u64,
    };
    let (a1, a2, b1, b2, b3) = (
        file(b"a one\n"),
        file(b"a two\n"),
        file(b"b one\n"),
        file(b"b two\n"),
        file(b"b three\n"),
    );
    let trees: Vec<Vec<(&[u8], FlatEntry)>> = vec![
        vec![(b"a.txt", a1), (b"b.txt", b1)],
        vec![(b"a.txt", a1), (b"b.txt", b2)],
        vec![(b"a.txt", a2), (b"b.txt", b2)],
        vec![(b"b.txt", b2), (b"c.txt", a2)],
        vec![(b"b.txt", b3), (b"c.txt", a2)],
    ];
    let mut ids = Vec::new();
    for (i, entries) in trees.into_iter().enumerate() {
        let tree = tree::build(&mut s, entries).unwrap();
        let who = |time| Signature {
            name: if i % 2 == 0 { "Ada" } else { "Bob" }.into(),
            email: if i % 2 == 0 {
                "ada@example.org"
            } else {
                "bob@example.org"
            }
            .into(),
            time,
            tz_minutes: 0,
        };
        let time = 1_700_000_000 + 60 * i as i64;
        let c = Commit {
            tree,
            parents: ids.last().copied().into_iter().collect(),
            author: who(time),
            committer: who(time),
            message: format!("change {i}\n"),
        };
        ids.push(s.put_object(ObjectKind::Commit, &encode(&c)).unwrap());
    }
    s.finish().unwrap();
    ids
}

fn listed(repo: &Repository, ids: &[ObjectId], query: LogQuery) -> Vec<usize> {
    repo.history()
        .log(&query)
        .unwrap()
        .map(|c| {
            let id = c.unwrap().id;
            ids.iter().position(|i| *i == id).unwrap()
        })
        .collect()
}

#[test]
fn each_filter_of_a_log_query_chooses_the_commits_git_log_would() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
    let ids = history(&repo);
    let tip = Some(ids[4].to_hex());
    let q = || LogQuery {
        revision: tip.clone(),
        ..Default::default()
    };
    assert_eq!(listed(&repo, &ids, q()), [4, 3, 2, 1, 0]);
    let paths = |p: &[&str]| p.iter().map(|p| p.as_bytes().to_vec()).collect();
    assert_eq!(
        listed(
            &repo,
            &ids,
            LogQuery {
                paths: paths(&["b.txt"]),
                ..q()
            }
        ),
        [4, 1, 0]
    );
    // c.txt came from a.txt by a rename: followed, its history goes on under the old name.
    assert_eq!(
        listed(
            &repo,
            &ids,
            LogQuery {
                paths: paths(&["c.txt"]),
                ..q()
            }
        ),
        [3]
    );
    let followed = LogQuery {
        paths: paths(&["c.txt"]),
        follow: true,
        ..q()
    };
    assert_eq!(listed(&repo, &ids, followed), [3, 2, 0]);
    // Following asks for one path; with two it lists what touches either.
    let two = LogQuery {
        paths: paths(&["c.txt", "b.txt"]),
        follow: true,
        ..q()
    };
    assert_eq!(listed(&repo, &ids, two), [4, 3, 1, 0]);
    assert_eq!(
        listed(
            &repo,
            &ids,
            LogQuery {
                author: Some("Bob <".into()),
                ..q()
            }
        ),
        [3, 1]
    );
    assert_eq!(
        listed(
            &repo,
            &ids,
            LogQuery {
                grep: Some("change 2".into()),
                ..q()
            }
        ),
        [2]
    );
    let window = LogQuery {
        since: Some(1_700_000_060),
        until: Some(1_700_000_180),
        ..q()
    };
    assert_eq!(listed(&repo, &ids, window), [3, 2, 1]);
    // Skip and count apply after the filters: a page of Ada's commits.
    let page = LogQuery {
        author: Some("Ada".into()),
        skip: 1,
        max_count: Some(1),
        ..q()
    };
    assert_eq!(listed(&repo, &ids, page), [2]);
    let range = LogQuery {
        revision: Some(format!("{}..{}", ids[1].to_hex(), ids[3].to_hex())),
        ..Default::default()
    };
    assert_eq!(listed(&repo, &ids, range), [3, 2]);
    assert_eq!(
        listed(
            &repo,
            &ids,
            LogQuery {
                topo_order: true,
                ..q()
            }
        ),
        [4, 3, 2, 1, 0]
    );
    let unknown = LogQuery {
        revision: Some("no-such-branch".into()),
        ..Default::default()
    };
    assert!(repo.history().log(&unknown).is_err());
}
