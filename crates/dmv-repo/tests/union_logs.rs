//! Union logs (the review log): entries appended on two diverged tips are
//! joined without loss, the same way on every replica, and a reader's
//! budget bounds what a log may make it hold.

mod common;

use common::Scratch;
use dmv_repo::RefUpdate;

const LOG: &str = "refs/meta/review";

fn texts(s: &Scratch, max: usize) -> Vec<String> {
    let entries = s.repo.history().log_entries(LOG, max).unwrap();
    entries.into_iter().map(|e| e.text).collect()
}

#[test]
fn diverged_logs_join_without_loss_and_the_same_way_twice() {
    let s = Scratch::new();
    let history = s.repo.history();
    assert!(texts(&s, 10).is_empty(), "no log: no entries");
    let first = history.append_to_log(LOG, "first").unwrap();
    let ours = history.append_to_log(LOG, "ours").unwrap();
    // Another replica appended on `first` meanwhile.
    let set = |to| {
        s.repo
            .update_refs(
                &[RefUpdate {
                    name: LOG.into(),
                    expected: None,
                    new: Some(to),
                }],
                "test",
                "rewind",
            )
            .unwrap()
    };
    set(first);
    let theirs = history.append_to_log(LOG, "theirs").unwrap();
    set(ours);
    let joined = history.join_into_log(LOG, theirs).unwrap();
    assert_eq!(s.repo.commit(&joined).unwrap().parents.len(), 2);
    let mut got = texts(&s, 10);
    assert_eq!(
        got[0], "first",
        "an entry comes after what its writer had seen"
    );
    got.sort();
    assert_eq!(got, ["first", "ours", "theirs"]);
    // A join is the same commit whichever side makes it.
    assert_eq!(history.join_logs(theirs, ours).unwrap(), joined);
    assert_eq!(history.join_logs(ours, theirs).unwrap(), joined);
    // Joining what the log holds already changes nothing.
    assert_eq!(history.join_into_log(LOG, ours).unwrap(), joined);
    assert_eq!(history.join_into_log(LOG, first).unwrap(), joined);

    // The reader's budget: 3 entries fit in 3, not in 2.
    assert_eq!(texts(&s, 3).len(), 3);
    let err = history.log_entries(LOG, 2).unwrap_err().to_string();
    assert!(err.contains("more than 2 entries"), "{err}");
    // An entry is bounded, and never empty.
    assert!(history.append_to_log(LOG, "").is_err());
    let huge = "x".repeat(dmv_repo::MAX_LOG_ENTRY_BYTES + 1);
    assert!(history.append_to_log(LOG, &huge).is_err());
    assert_eq!(
        s.repo.refs.get(LOG).unwrap(),
        Some(joined),
        "a refused entry writes nothing"
    );
}
