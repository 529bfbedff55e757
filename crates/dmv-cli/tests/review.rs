//! Review (issue 72): comments pinned to a version of a file and reviews of
//! a branch, kept in the repository's review log, which travels with push
//! and fetch over every kind of hub and merges without losing an entry.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::needs::{lacks, Need};
use common::remote::{commit_all, ok};
use common::servers::{HttpServer, S3Server};
use common::*;
use dmv_repo::store::ObjectId;

/// A person working in `dir`: their name signs what they write, their
/// environment reaches their hub (a token's, a bucket's credentials).
struct Person<'a> {
    dir: PathBuf,
    name: &'a str,
    env: Vec<(String, String)>,
}

impl Person<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = dmv_cmd(&self.dir);
        c.env("DMV_AUTHOR_NAME", self.name)
            .env("DMV_AUTHOR_EMAIL", format!("{}@studio.example", self.name))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(args);
        c
    }

    fn out(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.out(args);
        ok(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a command that must fail in one line; returns that line.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.out(args);
        assert!(
            !out.status.success(),
            "dmv {args:?} succeeded: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        err
    }

    fn comments(&self, extra: &[&str]) -> Vec<serde_json::Value> {
        let text = self.ok(&[&["comment", "list", "--json"], extra].concat());
        serde_json::from_str(&text).unwrap()
    }

    /// The id a `commented ID on …` / `review ID proposes …` line names.
    fn id_of(line: &str) -> String {
        line.split_whitespace().nth(1).unwrap().to_string()
    }
}

/// A bare hub holding one commit of `photo.jpg` and `notes.txt`.
fn seeded_hub(t: &Path) -> PathBuf {
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    let seed = t.join("seed");
    dmv(t, &["init", seed.to_str().unwrap()]);
    write_noise(&seed.join("photo.jpg"), 50_000, 1);
    std::fs::write(seed.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    commit_all(&seed, "seed");
    dmv(&seed, &["push", hub.to_str().unwrap(), "main"]);
    hub
}

fn clone<'a>(
    t: &Path,
    url: &str,
    name: &'a str,
    env: &[(String, String)],
    extra: &[&str],
) -> Person<'a> {
    let mut c = dmv_cmd(t);
    c.args(["clone", url, name])
        .args(extra)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    ok(&c.output().unwrap());
    Person {
        dir: t.join(name),
        name,
        env: env.to_vec(),
    }
}

/// Two people comment at the same time without seeing each other's; both
/// push (the second joins the first's comments on its way), both fetch:
/// each then lists both comments, a reply and a resolve, with the same ids.
fn comments_meet(ann: &Person, bob: &Person) {
    let a = Person::id_of(&ann.ok(&[
        "comment",
        "add",
        "photo.jpg",
        "--at",
        "10,20,300,200",
        "-m",
        "the sky is too warm @bob",
    ]));
    let b = Person::id_of(&bob.ok(&[
        "comment",
        "add",
        "notes.txt",
        "--lines",
        "2-3",
        "-m",
        "typo",
    ]));
    ann.ok(&["push"]);
    bob.ok(&["push"]);
    ann.ok(&["fetch"]);
    for p in [ann, bob] {
        let listed = p.comments(&[]);
        let ids: Vec<&str> = listed.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(listed.len(), 2, "{} sees both: {listed:?}", p.name);
        assert!(
            ids.iter().any(|id| id.starts_with(&a)) && ids.iter().any(|id| id.starts_with(&b)),
            "{ids:?}"
        );
    }
    let sky = &ann.comments(&["photo.jpg"])[0];
    assert_eq!(sky["by"]["name"], "ann");
    assert_eq!(
        sky["at"],
        serde_json::json!({"on": "region", "x": 10, "y": 20, "w": 300, "h": 200})
    );
    assert_eq!(sky["mentions"], serde_json::json!(["bob"]));
    assert_eq!(sky["on_this_version"], true);

    // Bob answers and resolves; ann answers too, before she fetches.
    bob.ok(&["comment", "reply", &a, "-m", "cooled it down"]);
    bob.ok(&["comment", "resolve", &a]);
    ann.ok(&["comment", "reply", &a, "-m", "thanks"]);
    bob.ok(&["push"]);
    ann.ok(&["push"]);
    bob.ok(&["fetch"]);
    for p in [ann, bob] {
        assert_eq!(
            p.comments(&["photo.jpg"]).len(),
            0,
            "resolved: not listed by default"
        );
        let all = p.comments(&["photo.jpg", "--all"]);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0]["resolved"], true);
        let replies: Vec<&str> = all[0]["replies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["text"].as_str().unwrap())
            .collect();
        assert_eq!(replies.len(), 2, "{} has both replies: {replies:?}", p.name);
        assert!(replies.contains(&"cooled it down") && replies.contains(&"thanks"));
    }
}

#[test]
fn comments_from_two_replicas_meet_through_a_directory_hub() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let ann = clone(t, hub.to_str().unwrap(), "ann", &[], &[]);
    let bob = clone(t, hub.to_str().unwrap(), "bob", &[], &[]);
    comments_meet(&ann, &bob);
    // The hub holds them too: a third clone sees the thread.
    let carol = clone(t, hub.to_str().unwrap(), "carol", &[], &[]);
    assert_eq!(carol.comments(&["--all"]).len(), 2);
    // The log's entries are not history: `rev-list --all` and `log --all` leave them out.
    assert_eq!(carol.ok(&["rev-list", "--all"]).lines().count(), 1);
    assert_eq!(carol.ok(&["log", "--all", "--oneline"]).lines().count(), 1);
}

const TOKENS: &str = "[tokens]\n\"tok-ann\" = { access = \"write\", user = \"ann\" }\n\"tok-bob\" = { access = \"write\", user = \"bob\" }\n";

#[test]
fn comments_from_two_replicas_meet_through_a_server() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    seeded_hub(t);
    let server = HttpServer::start(&format!("[repos]\nhub = \"hub\"\n{TOKENS}"), t, 0);
    let ann = clone(t, &server.url("hub"), "ann", &[], &["--token", "tok-ann"]);
    let bob = clone(t, &server.url("hub"), "bob", &[], &["--token", "tok-bob"]);
    comments_meet(&ann, &bob);
}

/// A repository kept in a bucket, behind two servers: ann pushes through
/// one, bob through the other.
#[test]
fn comments_from_two_replicas_meet_through_a_bucket_behind_two_servers() {
    if lacks(&[Need::Minio]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    seeded_hub(t);
    let minio = S3Server::minio();
    minio.create_bucket("review");
    let mut push = dmv_cmd(&t.join("seed"));
    minio.env(&mut push);
    ok(&push
        .env("AWS_ENDPOINT_URL", minio.endpoint())
        .args(["push", "s3://review/hub", "main"])
        .output()
        .unwrap());
    let config = t.join("tier.toml");
    std::fs::write(
        &config,
        format!(
            "[repos]\nhub = {{ url = \"s3://review/hub\", endpoint = \"{}\" }}\n{TOKENS}",
            minio.endpoint()
        ),
    )
    .unwrap();
    let credentials = [
        ("AWS_ACCESS_KEY_ID", common::servers::MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", common::servers::MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let one = HttpServer::start_with_env(&config, 0, &credentials);
    let two = HttpServer::start_with_env(&config, 0, &credentials);
    let ann = clone(t, &one.url("hub"), "ann", &[], &["--token", "tok-ann"]);
    let bob = clone(t, &two.url("hub"), "bob", &[], &["--token", "tok-bob"]);
    comments_meet(&ann, &bob);
    // A clone straight from the bucket has the thread.
    let env: Vec<(String, String)> = credentials
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain([("AWS_ENDPOINT_URL".to_string(), minio.endpoint())])
        .collect();
    let carol = clone(t, "s3://review/hub", "carol", &env, &[]);
    assert_eq!(carol.comments(&["--all"]).len(), 2);

    // A comment from a page of server two goes to the bucket: server one
    // shows it, and a replica fetching from the bucket lists it as bob's.
    let commit = ann.ok(&["rev-parse", "main"]);
    let status = web_comment(
        two.port,
        "tok-bob",
        &[
            ("path", "photo.jpg"),
            ("commit", commit.trim()),
            ("at", "40,50"),
            ("text", "from a page"),
        ],
    );
    assert_eq!(status, 303, "a comment from a page is taken");
    let (_, page) = http_get(one.port, "tok-ann", "/hub/file/main/photo.jpg");
    assert!(page.contains("from a page"), "server one shows it");
    carol.ok(&["fetch"]);
    let listed = carol.comments(&["photo.jpg"]);
    let paged = listed
        .iter()
        .find(|c| c["text"] == "from a page")
        .expect("the page's comment is in the bucket");
    assert_eq!(paged["by"]["name"], "bob");
    assert_eq!(
        paged["at"],
        serde_json::json!({"on": "region", "x": 40, "y": 50, "w": 0, "h": 0})
    );
}

/// POSTs a comment form of a review page with a bearer token: the status.
fn web_comment(port: u16, token: &str, fields: &[(&str, &str)]) -> u16 {
    let auth = format!("Bearer {token}");
    common::servers::http(
        port,
        "POST",
        "/hub/review/comment",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &common::servers::form_body(fields),
    )
    .0
}

fn http_get(port: u16, token: &str, path: &str) -> (u16, String) {
    let auth = format!("Bearer {token}");
    let (status, _, body) =
        common::servers::http(port, "GET", path, &[("Authorization", &auth)], b"");
    (status, body)
}

/// A comment on one version shows on later ones, marked as made on an
/// earlier version; at its own version it is not.
#[test]
fn a_comment_is_carried_forward_to_later_versions() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let ann = clone(t, hub.to_str().unwrap(), "ann", &[], &[]);
    ann.ok(&[
        "comment",
        "add",
        "photo.jpg",
        "--time",
        "1:02:13-1:02:15",
        "-m",
        "the logo",
    ]);
    write_noise(&ann.dir.join("photo.jpg"), 50_000, 2);
    ann.ok(&["commit", "-a", "-m", "fixed"]);
    let now = ann.comments(&["photo.jpg"]);
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["on_this_version"], false);
    assert_eq!(
        now[0]["at"],
        serde_json::json!({"on": "time", "from": 3_733_000, "to": 3_735_000})
    );
    let text = ann.ok(&["comment", "list", "photo.jpg"]);
    assert!(
        text.contains("at 1:02:13–1:02:15") && text.contains("[on an earlier version]"),
        "{text}"
    );
    assert_eq!(
        ann.comments(&["photo.jpg", "--rev", "HEAD~1"])[0]["on_this_version"],
        true
    );
    // A branch that forked before the comment's commit does not show it.
    ann.ok(&["branch", "old", "HEAD~1"]);
    ann.ok(&["comment", "add", "notes.txt", "-m", "on the file"]);
    assert_eq!(ann.comments(&["notes.txt"]).len(), 1);
    assert_eq!(
        ann.comments(&["notes.txt", "--rev", "old"]).len(),
        0,
        "forked before: not shown"
    );
}

fn head_commit_of(p: &Person, rev: &str) -> String {
    p.ok(&["rev-parse", rev]).trim().to_string()
}

/// A review proposed for main, approved by its reviewer from another
/// replica, lands; an approval no longer holds once the branch moves, the
/// author cannot approve their own, nor can someone not asked.
#[test]
fn a_review_is_approved_by_its_reviewer_and_lands() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let ann = clone(t, hub.to_str().unwrap(), "ann", &[], &[]);
    let bob = clone(t, hub.to_str().unwrap(), "bob", &[], &[]);
    let carol = clone(t, hub.to_str().unwrap(), "carol", &[], &[]);
    ann.ok(&["switch", "-c", "retouch"]);
    write_noise(&ann.dir.join("photo.jpg"), 50_000, 3);
    ann.ok(&["commit", "-a", "-m", "retouched"]);
    ann.ok(&["push", "origin", "retouch"]);
    let created = ann.ok(&[
        "review",
        "create",
        "retouch",
        "--into",
        "main",
        "-m",
        "Retouch the sky",
        "--reviewer",
        "bob",
    ]);
    let id = Person::id_of(&created);
    assert!(created.contains("proposes retouch for main"), "{created}");
    assert!(ann
        .fails(&["review", "create", "retouch", "--into", "main"])
        .contains("already proposes"));
    assert!(ann
        .fails(&["review", "approve", &id])
        .contains("someone else approves it"));
    ann.ok(&["push"]);

    for p in [&bob, &carol] {
        p.ok(&["fetch"]);
        let listed: Vec<serde_json::Value> =
            serde_json::from_str(&p.ok(&["review", "list", "--json"])).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0]["title"], "Retouch the sky");
        assert_eq!(listed[0]["state"], serde_json::json!({"state": "open"}));
    }
    assert!(carol
        .fails(&["review", "approve", &id])
        .contains("not a reviewer"));
    let approved = bob.ok(&["review", "approve", &id]);
    let tip = head_commit_of(&ann, "retouch");
    assert!(approved.contains(&tip[..12]), "{approved} names {tip}");
    bob.ok(&[
        "comment",
        "add",
        "photo.jpg",
        "--rev",
        "origin/retouch",
        "--at",
        "5,5",
        "-m",
        "nice",
    ]);
    bob.ok(&["push"]);

    // Ann moves the branch after the approval: it no longer holds.
    ann.ok(&["fetch"]);
    write_noise(&ann.dir.join("photo.jpg"), 50_000, 4);
    ann.ok(&["commit", "-a", "-m", "one more"]);
    ann.ok(&["switch", "main"]);
    let err = ann.fails(&["review", "land", &id]);
    assert!(
        err.contains("has 0 approval(s)") && err.contains("needs 1"),
        "{err}"
    );
    let show = ann.ok(&["review", "show", &id]);
    assert!(
        show.contains("approved by bob") && show.contains("(the branch moved since)"),
        "{show}"
    );
    assert!(
        show.contains("2 commit(s):") && show.contains("one more") && show.contains("retouched"),
        "{show}"
    );
    assert!(
        show.contains("nice"),
        "the review shows the comments on its files: {show}"
    );
    ann.ok(&["push", "origin", "retouch"]);
    ann.ok(&["push"]);
    bob.ok(&["fetch"]);
    bob.ok(&["review", "approve", &id]);
    bob.ok(&["push"]);
    ann.ok(&["fetch"]);

    // Landing merges the branch into main, here, and records it.
    let landed = ann.ok(&["review", "land", &id]);
    assert!(landed.contains("landed review"), "{landed}");
    write_noise(&t.join("expected.jpg"), 50_000, 4);
    assert_eq!(
        std::fs::read(ann.dir.join("photo.jpg")).unwrap(),
        std::fs::read(t.join("expected.jpg")).unwrap()
    );
    let main = head_commit_of(&ann, "main");
    let retouch = head_commit_of(&ann, "retouch");
    assert_eq!(main, retouch, "a fast-forward");
    assert!(ann
        .fails(&["review", "land", &id])
        .contains("landed already"));
    ann.ok(&["push", "origin", "main"]);
    ann.ok(&["push"]);
    carol.ok(&["fetch"]);
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&carol.ok(&["review", "list", "--all", "--json"])).unwrap();
    assert_eq!(all[0]["state"]["state"], "landed");
    assert_eq!(all[0]["state"]["at"], main);
    assert!(carol.ok(&["review", "list"]).is_empty(), "no open review");
}

/// What a person types is bounded and kept as typed: an overlong comment
/// or an anchor out of bounds is refused in one line and writes nothing;
/// markup and control characters are kept in JSON and never printed raw.
#[test]
fn hostile_comments_are_refused_or_kept_harmless() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let ann = clone(t, hub.to_str().unwrap(), "ann", &[], &[]);
    let log = || ann.out(&["rev-parse", "refs/meta/review"]).stdout;
    let before = log();
    let long = "x".repeat(16 * 1024 + 1);
    for args in [
        vec!["comment", "add", "photo.jpg", "-m", long.as_str()],
        vec!["comment", "add", "photo.jpg", "-m", "   "],
        vec!["comment", "add", "photo.jpg", "--at", "1,2,3", "-m", "x"],
        vec![
            "comment",
            "add",
            "photo.jpg",
            "--at",
            "1,2,3000000,1",
            "-m",
            "x",
        ],
        vec!["comment", "add", "photo.jpg", "--time", "5-3", "-m", "x"],
        vec!["comment", "add", "photo.jpg", "--lines", "0", "-m", "x"],
        vec!["comment", "add", "nowhere.jpg", "-m", "x"],
        vec!["comment", "reply", "zzzz", "-m", "x"],
        vec!["comment", "resolve", "abc"],
        vec!["review", "approve", "0000"],
        vec!["review", "create", "nope"],
    ] {
        ann.fails(&args);
    }
    assert_eq!(log(), before, "nothing was written");
    let hostile = "<script>alert(1)</script> \u{1b}[31mred\u{1b}[0m";
    ann.ok(&["comment", "add", "photo.jpg", "-m", hostile]);
    assert_eq!(ann.comments(&[])[0]["text"], hostile);
    let text = ann.ok(&["comment", "list"]);
    assert!(
        !text.contains('\u{1b}'),
        "no escape reaches the terminal: {text:?}"
    );
}

/// Where a protected main is kept: a directory behind a server (its rule
/// in its config, `review.protect`), or a bucket behind one (the rule in
/// the server's entry of it, `protect`).
#[derive(Clone, Copy, PartialEq)]
enum Kept {
    Dir,
    Bucket,
}

/// A hub that protects main (`review.protect main=1`) lets it move only by
/// landing a review whose branch has an approval of its commit now, over
/// HTTP and through a path remote alike; an approval forged under another
/// person's name is refused at the hub, and a branch deletion too.
#[test]
fn a_protected_branch_moves_only_by_landing_an_approved_review() {
    main_moves_only_by_landing_a_review(Kept::Dir);
}

/// The same rules in a bucket behind a server, the server's `protect`
/// judging the bucket's review log and branches read from the bucket.
#[test]
fn a_protected_branch_in_a_bucket_moves_only_by_landing_an_approved_review() {
    if lacks(&[Need::Minio]) {
        return;
    }
    main_moves_only_by_landing_a_review(Kept::Bucket);
}

fn main_moves_only_by_landing_a_review(kept: Kept) {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = seeded_hub(t);
    let mallory_token = "\"tok-mallory\" = { access = \"write\", user = \"mallory\" }\n";
    let credentials = [
        ("AWS_ACCESS_KEY_ID", common::servers::MINIO_USER),
        ("AWS_SECRET_ACCESS_KEY", common::servers::MINIO_SECRET),
        ("AWS_REGION", "us-east-1"),
    ];
    let minio = (kept == Kept::Bucket).then(S3Server::minio);
    let server = match &minio {
        None => {
            dmv(&hub, &["config", "review.protect", "main=1"]);
            assert_eq!(dmv(&hub, &["config", "review.protect"]).trim(), "main=1");
            HttpServer::start(
                &format!("[repos]\nhub = \"hub\"\n{TOKENS}{mallory_token}"),
                t,
                0,
            )
        }
        Some(minio) => {
            minio.create_bucket("guarded");
            let mut push = dmv_cmd(&t.join("seed"));
            minio.env(&mut push);
            ok(&push
                .env("AWS_ENDPOINT_URL", minio.endpoint())
                .args(["push", "s3://guarded/hub", "main"])
                .output()
                .unwrap());
            let config = t.join("guard.toml");
            std::fs::write(
                &config,
                format!(
                    "[repos]\nhub = {{ url = \"s3://guarded/hub\", endpoint = \"{}\", protect = \"main=1\" }}\n{TOKENS}{mallory_token}",
                    minio.endpoint()
                ),
            )
            .unwrap();
            HttpServer::start_with_env(&config, 0, &credentials)
        }
    };
    let ann = clone(t, &server.url("hub"), "ann", &[], &["--token", "tok-ann"]);
    let bob = clone(t, &server.url("hub"), "bob", &[], &["--token", "tok-bob"]);
    // Where main is at the hub, as a third clone hears it.
    let eve = clone(t, &server.url("hub"), "eve", &[], &["--token", "tok-bob"]);
    let hub_main = || {
        eve.ok(&["fetch"]);
        eve.ok(&["rev-parse", "origin/main"])
    };
    let main_at_start = hub_main();

    // A plain commit pushed to main, over HTTP (and a path remote): refused.
    std::fs::write(ann.dir.join("notes.txt"), "straight to main\n").unwrap();
    ann.ok(&["commit", "-a", "-m", "unreviewed"]);
    let err = ann.fails(&["push", "origin", "main"]);
    assert!(
        err.contains("main is protected") && err.contains("nothing was changed"),
        "{err}"
    );
    if kept == Kept::Dir {
        let err = ann.fails(&["push", hub.to_str().unwrap(), "main"]);
        assert!(err.contains("main is protected"), "{err}");
    }
    assert!(ann
        .fails(&["push", "origin", "--delete", "main"])
        .contains("main is protected"));
    // A browser's upload into main: refused the same way.
    let (code, body) = upload_to_main(server.port, main_at_start.trim());
    assert!(
        code >= 400 && body.contains("main is protected"),
        "{code} {body}"
    );
    assert_eq!(hub_main(), main_at_start);

    // The same change as a review, asked of bob.
    ann.ok(&["branch", "tidy"]);
    ann.ok(&["reset", "--hard", "origin/main"]);
    ann.ok(&["push", "origin", "tidy"]);
    let id = Person::id_of(&ann.ok(&[
        "review",
        "create",
        "tidy",
        "--into",
        "main",
        "--reviewer",
        "bob",
    ]));
    ann.ok(&["push"]);
    let err = ann.fails(&["push", "origin", "tidy:main"]);
    assert!(
        err.contains(&format!("review {} has 0", &id[..12])),
        "{err}"
    );

    // Mallory writes an approval under bob's name: the hub refuses it.
    let mallory = clone(
        t,
        &server.url("hub"),
        "mallory",
        &[],
        &["--token", "tok-mallory"],
    );
    let forged = Person {
        dir: mallory.dir.clone(),
        name: "bob",
        env: vec![],
    };
    forged.ok(&["review", "approve", &id]);
    let err = mallory.fails(&["push"]);
    assert!(
        err.contains("an approval by bob, which only they can send (this push is mallory's)"),
        "{err}"
    );

    // Bob's own approval lands, and so does the review.
    bob.ok(&["fetch"]);
    bob.ok(&["review", "approve", &id]);
    bob.ok(&["push"]);
    ann.ok(&["fetch"]);
    ann.ok(&["review", "land", &id]);
    ann.ok(&["push", "origin", "main"]);
    assert_eq!(hub_main(), ann.ok(&["rev-parse", "tidy"]));

    // A second review, from before the first landed, lands as a merge:
    // the merge alone is taken, not the merge with a change of its own.
    ann.ok(&["checkout", "-b", "more", main_at_start.trim()]);
    std::fs::write(ann.dir.join("more.txt"), "reviewed\n").unwrap();
    ann.ok(&["add", "more.txt"]);
    ann.ok(&["commit", "-m", "more"]);
    ann.ok(&["push", "origin", "more"]);
    let more = Person::id_of(&ann.ok(&[
        "review",
        "create",
        "more",
        "--into",
        "main",
        "--reviewer",
        "bob",
    ]));
    ann.ok(&["push"]);
    bob.ok(&["pull"]);
    bob.ok(&["review", "approve", &more]);
    bob.ok(&["push"]);
    ann.ok(&["checkout", "main"]);
    ann.ok(&["fetch"]);
    // Merged by hand, so the hub judges the merge against the open review.
    ann.ok(&["merge", "more", "-m", "Merge more"]);
    let merge = ann.ok(&["rev-parse", "HEAD"]);
    std::fs::write(ann.dir.join("notes.txt"), "slipped in\n").unwrap();
    ann.ok(&["commit", "-a", "--amend", "--no-edit"]);
    let err = ann.fails(&["push", "origin", "main"]);
    assert!(
        err.contains("main is protected") && err.contains("changes notes.txt itself"),
        "{err}"
    );
    ann.ok(&["reset", "--hard", merge.trim()]);
    ann.ok(&["push", "origin", "main"]);
    assert_eq!(hub_main(), merge);
    assert_eq!(ann.ok(&["show", "main:notes.txt"]), "straight to main\n");

    // A writer sending the review log back to an older value (dropping the
    // approvals and the landing) is answered as if it had moved: the log
    // at the hub keeps every entry.
    eve.ok(&["fetch"]);
    let id_of = |rev: &str| ObjectId::from_hex(eve.ok(&["rev-parse", rev]).trim()).unwrap();
    let (tip, older) = (id_of("refs/meta/review"), id_of("refs/meta/review~1"));
    let repo = dmv_repo::Repository::open(&eve.dir).unwrap();
    let mut spec = dmv_sync::RemoteSpec::parse(&server.url("hub")).unwrap();
    spec.token = Some("tok-bob".into());
    let mut remote = spec.connect().unwrap();
    let back = dmv_sync::PushRef {
        name: "refs/meta/review".into(),
        expected: Some(tip),
        new: Some(older),
    };
    match dmv_sync::send_objects(&repo, remote.as_mut(), &[back], &[tip], &dmv_repo::Silent) {
        Err(dmv_sync::SyncError::Rejected { found, .. }) => assert_eq!(found, Some(tip)),
        other => panic!("a log moved back was not answered as moved: {other:?}"),
    }
    eve.ok(&["fetch"]);
    assert_eq!(id_of("refs/meta/review"), tip);
}

/// A browser's upload of one file into main, as ann: the commit's status and body.
fn upload_to_main(port: u16, seen: &str) -> (u16, String) {
    use common::servers::http;
    let auth = [
        ("Authorization", "Bearer tok-ann"),
        ("Content-Type", "application/json"),
    ];
    let data = b"from a browser";
    let (code, _, body) = http(
        port,
        "POST",
        "/hub/uploads",
        &auth,
        format!(r#"{{"name":"up.txt","size":{}}}"#, data.len()).as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    let (code, _, body) = http(
        port,
        "PUT",
        &format!("/hub/uploads/{id}?offset=0"),
        &auth[..1],
        data,
    );
    assert_eq!(code, 200, "{body}");
    let (code, _, body) = http(
        port,
        "POST",
        "/hub/commit-uploads",
        &auth,
        format!(
            r#"{{"branch":"main","seen":"{seen}","folder":"","message":"uploaded","files":[{{"name":"up.txt","id":"{id}"}}]}}"#
        )
        .as_bytes(),
    );
    (code, body)
}
