//! The comments a list shows and the mentions a hub tells of, on a small
//! history built from objects: which comments each filter keeps, whether
//! each is on the version a commit holds, and which mentions a move of
//! the review log brings.

use std::collections::HashMap;

use dmv_repo::ref_names::REVIEW_LOG;
use dmv_repo::store::object::{encode, Commit, EntryKind, Signature};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind};
use dmv_repo::{tree, FlatEntry, Repository};
use dmv_review::{
    comment_as, comments_carried_to, mentions_brought, pin, reply_as, resolve_as, Anchor, Board,
    CommentFilter, HubRepo, MAX_MENTIONS_TOLD,
};

/// c0 holds a.jpg (a1) and b.jpg; c1 changes a.jpg (a2); side, off c0,
/// changes b.jpg. Returns [c0, c1, side] and a1's id.
fn history(repo: &Repository) -> ([ObjectId; 3], ObjectId) {
    let mut s = repo.store.begin_write().unwrap();
    let mut file = |content: &[u8]| FlatEntry {
        kind: EntryKind::File,
        id: s.put_object(ObjectKind::Chunk, content).unwrap(),
        size: content.len() as u64,
    };
    let (a1, a2, b1, b2) = (file(b"a1"), file(b"a2"), file(b"b1"), file(b"b2"));
    let who = Signature {
        name: "Ada".into(),
        email: "ada@example.org".into(),
        time: 1_700_000_000,
        tz_minutes: 0,
    };
    let mut commit = |entries: Vec<(&[u8], FlatEntry)>, parents: Vec<ObjectId>| {
        let tree = tree::build(&mut s, entries).unwrap();
        let c = Commit {
            tree,
            parents,
            author: who.clone(),
            committer: who.clone(),
            message: "change\n".into(),
        };
        s.put_object(ObjectKind::Commit, &encode(&c)).unwrap()
    };
    let c0 = commit(vec![(b"a.jpg", a1), (b"b.jpg", b1)], vec![]);
    let c1 = commit(vec![(b"a.jpg", a2), (b"b.jpg", b1)], vec![c0]);
    let side = commit(vec![(b"a.jpg", a1), (b"b.jpg", b2)], vec![c0]);
    s.finish().unwrap();
    ([c0, c1, side], a1.id)
}

fn board(repo: &Repository) -> Board {
    Board::read(repo, 1000).unwrap()
}

fn log_tip(repo: &Repository) -> Option<ObjectId> {
    repo.refs.get(REVIEW_LOG).unwrap()
}

#[test]
fn each_filter_keeps_the_comments_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
    let ([c0, c1, side], a1) = history(&repo);
    let at = |c, p| pin(&repo, c, p).unwrap();
    let whole = Anchor::File;
    let ann = comment_as(&repo, "ann", at(c0, "a.jpg"), whole, "@bob look, @carl").unwrap();
    let bob = comment_as(&repo, "bob", at(c0, "b.jpg"), whole, "fine").unwrap();
    let carl = comment_as(&repo, "carl", at(c1, "a.jpg"), whole, "better").unwrap();
    let elsewhere = comment_as(&repo, "ann", at(side, "b.jpg"), whole, "@bob side").unwrap();
    reply_as(&repo, "bob", &board(&repo), &carl.to_hex(), "@ann agreed").unwrap();
    resolve_as(&repo, "bob", &board(&repo), &bob.to_hex(), true).unwrap();
    let b = board(&repo);
    let list = |filter: CommentFilter<'_>, versions: &HashMap<&str, ObjectId>| {
        comments_carried_to(&repo, &b, c1, &filter, versions)
            .unwrap()
            .iter()
            .map(|s| (s.comment.id, s.on_this_version))
            .collect::<Vec<_>>()
    };
    let none = HashMap::new();
    // Open ones in c1's history; a.jpg changed since ann's, so hers is on an earlier version.
    assert_eq!(
        list(CommentFilter::default(), &none),
        [(ann, false), (carl, true)]
    );
    let all = CommentFilter {
        resolved_too: true,
        ..CommentFilter::default()
    };
    assert_eq!(list(all, &none), [(ann, false), (bob, true), (carl, true)]);
    let mentioning = |name| CommentFilter {
        mentioning: Some(name),
        ..all
    };
    assert_eq!(list(mentioning("bob"), &none), [(ann, false)]);
    // A reply's mention counts for its thread.
    assert_eq!(list(mentioning("ann"), &none), [(carl, true)]);
    assert!(list(mentioning("dora"), &none).is_empty());
    let by = CommentFilter {
        by: Some("carl"),
        ..all
    };
    assert_eq!(list(by, &none), [(carl, true)]);
    let made_at = CommentFilter {
        made_at: Some(c0),
        ..all
    };
    assert_eq!(list(made_at, &none), [(ann, false), (bob, true)]);
    let path = CommentFilter {
        paths: Some(&["b.jpg"]),
        ..all
    };
    assert_eq!(list(path, &none), [(bob, true)]);
    // A version the caller knows is taken instead of the tree's.
    let known = HashMap::from([("a.jpg", a1)]);
    assert_eq!(
        list(CommentFilter::default(), &known),
        [(ann, true), (carl, false)]
    );
    // The side branch's comment is carried to its own commit only.
    let on_side = comments_carried_to(&repo, &b, side, &CommentFilter::default(), &none).unwrap();
    assert!(on_side.iter().any(|s| s.comment.id == elsewhere));
}

#[test]
fn a_log_move_tells_the_mentions_it_brings_and_no_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
    let ([c0, _, _], _) = history(&repo);
    let file = pin(&repo, c0, "a.jpg").unwrap();
    let first = comment_as(&repo, "ann", file.clone(), Anchor::File, "@bob the sky").unwrap();
    comment_as(&repo, "ann", file.clone(), Anchor::File, "no one named").unwrap();
    let old = log_tip(&repo);
    let reply = reply_as(
        &repo,
        "bob",
        &board(&repo),
        &first.to_hex(),
        "@ann @carl done",
    )
    .unwrap();
    let hub = HubRepo(&repo);
    let (told, more) = mentions_brought(&hub, old, log_tip(&repo).unwrap()).unwrap();
    assert_eq!(more, 0);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].id, reply);
    assert_eq!(
        (told[0].by.as_str(), told[0].path.as_str()),
        ("bob", "a.jpg")
    );
    assert_eq!(told[0].names, ["ann", "carl"]);
    // From nothing, the whole log: both mentions, oldest first.
    let (told, _) = mentions_brought(&hub, None, log_tip(&repo).unwrap()).unwrap();
    let ids: Vec<ObjectId> = told.iter().map(|m| m.id).collect();
    assert_eq!(ids, [first, reply]);
    // A long log tells its newest mentions, and how many more it held.
    for i in 0..MAX_MENTIONS_TOLD + 3 {
        comment_as(
            &repo,
            "ann",
            file.clone(),
            Anchor::File,
            &format!("@bob {i}"),
        )
        .unwrap();
    }
    let (told, more) = mentions_brought(&hub, old, log_tip(&repo).unwrap()).unwrap();
    assert_eq!((told.len(), more), (MAX_MENTIONS_TOLD, 4));
    assert_eq!(
        told.last().unwrap().text,
        format!("@bob {}", MAX_MENTIONS_TOLD + 2)
    );
}
