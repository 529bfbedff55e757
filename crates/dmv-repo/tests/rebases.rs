//! Rebase through the library (`repo.merges().rebase*`), as every front
//! end reaches it: the plan, picks in memory and through the working tree,
//! a stopped pick continued, skipped or aborted, and the interactive
//! actions. dmv-cli's tests/rebase.rs keeps what only the binary shows
//! (its words, the editor it starts, kills at its steps, a sync that
//! finishes a rebase cut short).

mod common;
use common::{noise, Scratch};

use dmv_repo::store::ObjectId;
use dmv_repo::{KeepMessages, RebaseAction, RebaseEditor, RebaseOutcome, RebaseStep, RepoError};
use dmv_repo::{Silent, Status};

fn commit_file(s: &Scratch, name: &str, text: &str, message: &str) -> ObjectId {
    s.write(name, text);
    s.add(&[name]);
    s.repo.commit_staged(message).unwrap().expect("a commit")
}

/// Subjects along the first-parent line from `rev`, newest first.
fn subjects(s: &Scratch, rev: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = Some(s.rev(rev));
    while let Some(id) = at {
        let c = s.repo.commit(&id).unwrap();
        out.push(c.message.lines().next().unwrap_or("").to_string());
        at = c.parents.first().copied();
    }
    out
}

/// main: base, "main 1" (first line of t.txt); topic from base: "topic 1"
/// (last line of t.txt), "topic 2" (n.txt), "topic 3" (a photo). On topic.
fn topic_behind_main() -> Scratch {
    let s = Scratch::new();
    commit_file(&s, "t.txt", "a\nb\nc\nd\ne\n", "base");
    s.branch_here("topic");
    commit_file(&s, "t.txt", "a\nb\nc\nd\nE\n", "topic 1");
    commit_file(&s, "n.txt", "new\n", "topic 2");
    s.write("shot.jpg", noise(40_000, 1));
    s.add(&["shot.jpg"]);
    s.repo.commit_staged("topic 3").unwrap().unwrap();
    s.switch("main");
    commit_file(&s, "t.txt", "A\nb\nc\nd\ne\n", "main 1");
    s.switch("topic");
    s
}

fn rebase_onto(s: &Scratch, upstream: &str, edit: impl Fn(&mut Vec<RebaseStep>)) -> RebaseOutcome {
    let onto = s.rev(upstream);
    let mut plan = s.repo.merges().rebase_plan(onto).unwrap();
    edit(&mut plan);
    s.repo
        .merges()
        .rebase(onto, plan, &KeepMessages, &Silent)
        .unwrap()
}

fn on_branch_clean(s: &Scratch, branch: &str) {
    let st: Status = s.repo.status().unwrap();
    assert_eq!(
        st.branch.as_deref(),
        Some(format!("refs/heads/{branch}").as_str())
    );
    assert!(st.rebase.is_none() && st.merge.is_none());
    assert!(st.staged.is_empty() && st.unstaged.is_empty() && st.untracked.is_empty());
    s.assert_fsck_clean();
}

#[test]
fn a_rebase_replays_the_branch_onto_its_new_base() {
    let s = topic_behind_main();
    let outcome = rebase_onto(&s, "main", |_| {});
    assert_eq!(outcome, RebaseOutcome::Done(s.rev("HEAD")));
    assert_eq!(
        subjects(&s, "HEAD"),
        ["topic 3", "topic 2", "topic 1", "main 1", "base"]
    );
    assert_eq!(
        s.rev("HEAD~3"),
        s.rev("main"),
        "the branch now starts at main"
    );
    assert_eq!(s.read("t.txt").unwrap(), b"A\nb\nc\nd\nE\n");
    on_branch_clean(&s, "topic");
    assert_eq!(rebase_onto(&s, "main", |_| {}), RebaseOutcome::UpToDate);
}

/// Picks made without the working tree merge text line by line, each on
/// the one before, as the working tree's picks do.
#[test]
fn picks_on_the_same_text_file_merge_onto_each_other() {
    let s = Scratch::new();
    commit_file(&s, "t.txt", "a\nb\nc\nd\ne\nf\ng\nh\n", "base");
    s.branch_here("topic");
    commit_file(&s, "t.txt", "a\nb\nc\nD\ne\nf\ng\nh\n", "topic 1");
    commit_file(&s, "t.txt", "a\nb\nc\nD\ne\nf\ng\nH\n", "topic 2");
    s.switch("main");
    commit_file(&s, "t.txt", "A\nb\nc\nd\ne\nf\ng\nh\n", "main 1");
    s.switch("topic");
    rebase_onto(&s, "main", |_| {});
    assert_eq!(
        subjects(&s, "HEAD"),
        ["topic 2", "topic 1", "main 1", "base"]
    );
    assert_eq!(s.read("t.txt").unwrap(), b"A\nb\nc\nD\ne\nf\ng\nH\n");
    let first = s.in_commit("HEAD~1", "t.txt").unwrap();
    assert_eq!(
        first, b"A\nb\nc\nD\ne\nf\ng\nh\n",
        "each pick is its own commit"
    );
    on_branch_clean(&s, "topic");
}

/// A pick that conflicts stops with the branch unmoved; nothing merges
/// into the middle; abort puts back exactly what was, continue after
/// settling finishes, skip leaves that commit out.
#[test]
fn a_stopped_pick_is_continued_skipped_or_aborted() {
    let stopped = || {
        let s = topic_behind_main();
        s.switch("main");
        commit_file(&s, "t.txt", "A\nb\nc\nd\ne-main\n", "main 2");
        s.switch("topic");
        let topic = s.rev("topic");
        let before = s.snapshot();
        let RebaseOutcome::Stopped { conflicts, .. } = rebase_onto(&s, "main", |_| {}) else {
            panic!("the first pick conflicts");
        };
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].path, b"t.txt");
        (s, topic, before)
    };

    let (s, topic, before) = stopped();
    assert_eq!(
        s.repo.refs.get("refs/heads/topic").unwrap(),
        Some(topic),
        "unmoved"
    );
    assert!(s.repo.status().unwrap().rebase.is_some());
    let plan = s.repo.merges().rebase_plan(s.rev("main")).unwrap();
    let again = s
        .repo
        .merges()
        .rebase(s.rev("main"), plan, &KeepMessages, &Silent);
    // (Refused for the stopped pick's merge state, which it finds first.)
    let refused = matches!(
        again,
        Err(RepoError::RebaseInProgress | RepoError::MergeInProgress { .. })
    );
    assert!(refused, "{again:?}");
    let into = s.repo.merges().merge(s.rev("main"), "main", &Silent);
    assert!(matches!(into, Err(RepoError::RebaseInProgress)), "{into:?}");
    s.repo.merges().rebase_abort(&Silent).unwrap();
    assert_eq!(s.snapshot(), before);
    assert_eq!(s.rev("HEAD"), topic);
    on_branch_clean(&s, "topic");

    let (s, _, _) = stopped();
    s.write("t.txt", "A\nb\nc\nd\nE-both\n");
    s.add(&["t.txt"]);
    let done = s
        .repo
        .merges()
        .rebase_continue(&KeepMessages, &Silent)
        .unwrap();
    assert_eq!(done, RebaseOutcome::Done(s.rev("HEAD")));
    let want = ["topic 3", "topic 2", "topic 1", "main 2", "main 1", "base"];
    assert_eq!(subjects(&s, "HEAD"), want);
    assert_eq!(s.read("t.txt").unwrap(), b"A\nb\nc\nd\nE-both\n");
    on_branch_clean(&s, "topic");

    let (s, _, _) = stopped();
    s.repo.merges().rebase_skip(&KeepMessages, &Silent).unwrap();
    assert_eq!(
        subjects(&s, "HEAD"),
        ["topic 3", "topic 2", "main 2", "main 1", "base"]
    );
    assert_eq!(s.read("t.txt").unwrap(), b"A\nb\nc\nd\ne-main\n");
    on_branch_clean(&s, "topic");
}

/// Gives every reworded or squashed commit the same new message.
struct Message(&'static str);

impl RebaseEditor for Message {
    fn message(&self, _proposed: &str) -> Option<String> {
        Some(self.0.to_string())
    }
}

#[test]
fn an_edited_plan_rewords_squashes_fixes_up_reorders_and_drops() {
    fn act(plan: &mut [RebaseStep], actions: &[RebaseAction]) {
        for (step, action) in plan.iter_mut().zip(actions) {
            step.action = *action;
        }
    }
    use RebaseAction::{Drop, Fixup, Pick, Reword, Squash};

    // Reword 1, fold 2 into it, drop 3.
    let s = topic_behind_main();
    let onto = s.rev("main");
    let mut plan = s.repo.merges().rebase_plan(onto).unwrap();
    act(&mut plan, &[Reword, Squash, Drop]);
    s.repo
        .merges()
        .rebase(onto, plan, &Message("one and two"), &Silent)
        .unwrap();
    assert_eq!(subjects(&s, "HEAD"), ["one and two", "main 1", "base"]);
    assert_eq!(s.read("n.txt").unwrap(), b"new\n");
    assert_eq!(
        s.read("shot.jpg"),
        None,
        "the dropped commit's photo is gone"
    );
    on_branch_clean(&s, "topic");

    // Reordered (2, 1, then 3 as a fixup of 1): the fixup keeps 1's message.
    let s = topic_behind_main();
    rebase_onto(&s, "main", |plan| {
        plan.swap(0, 1);
        act(plan, &[Pick, Pick, Fixup]);
    });
    assert_eq!(
        subjects(&s, "HEAD"),
        ["topic 1", "topic 2", "main 1", "base"]
    );
    assert_eq!(
        s.read("shot.jpg").unwrap(),
        noise(40_000, 1),
        "the fixup's change is kept"
    );
    on_branch_clean(&s, "topic");

    // A plan that starts with squash is refused before anything moves.
    let head = s.rev("HEAD");
    let onto = s.rev("HEAD~2");
    let mut plan = s.repo.merges().rebase_plan(onto).unwrap();
    act(&mut plan, &[Squash]);
    let refused = s
        .repo
        .merges()
        .rebase(onto, plan, &KeepMessages, &Silent)
        .unwrap_err();
    assert!(
        refused.to_string().contains("no commit before it"),
        "{refused}"
    );
    assert_eq!(s.rev("HEAD"), head);
    on_branch_clean(&s, "topic");
}
