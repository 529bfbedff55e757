//! The review log's events come from other replicas and hubs: whatever
//! bytes an entry holds, reading it never panics, and every event a
//! replica can write reads back as itself.

use dmv_repo::store::ObjectId;
use dmv_review::{Anchor, Event, Pinned, MAX_TEXT_BYTES};
use proptest::prelude::*;

fn anchor() -> impl Strategy<Value = Anchor> {
    prop_oneof![
        Just(Anchor::File),
        (
            0..=1_000_000u32,
            0..=1_000_000u32,
            0..=1_000_000u32,
            0..=1_000_000u32
        )
            .prop_map(|(x, y, w, h)| Anchor::Region { x, y, w, h }),
        (0..=1_000_000u64, 0..=1_000_000u64).prop_map(|(a, b)| Anchor::Time {
            from: a.min(b),
            to: a.max(b)
        }),
        (1..=1000u32, 0..=1000u32).prop_map(|(a, n)| Anchor::Lines {
            first: a,
            last: a + n
        }),
    ]
}

fn id() -> impl Strategy<Value = ObjectId> {
    any::<[u8; 32]>().prop_map(ObjectId)
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (
            "[a-z]{1,8}(/[a-z0-9 ._-]{1,8}){0,3}",
            id(),
            id(),
            anchor(),
            "\\PC{0,40}[a-z]",
            proptest::option::of(id())
        )
            .prop_map(
                |(path, commit, version, at, text, reply_to)| Event::Comment {
                    file: Pinned {
                        path,
                        commit,
                        version
                    },
                    at,
                    text,
                    reply_to,
                }
            ),
        (id(), any::<bool>()).prop_map(|(comment, resolved)| Event::Resolve { comment, resolved }),
        (
            "[a-z]{1,12}",
            "[a-z]{1,12}",
            "\\PC{0,30}",
            proptest::collection::vec("[a-z]{1,8}", 0..4)
        )
            .prop_map(|(branch, into, title, reviewers)| Event::Review {
                branch,
                into,
                title,
                reviewers
            }),
        (id(), id()).prop_map(|(review, commit)| Event::Approve { review, commit }),
        (id(), proptest::option::of(id()))
            .prop_map(|(review, landed)| Event::Close { review, landed }),
    ]
}

proptest! {
    #[test]
    fn any_text_reads_without_panicking(text in "\\PC{0,300}") {
        let _ = Event::decode(&text);
    }

    #[test]
    fn json_of_any_shape_reads_without_panicking(
        kind in "(comment|resolve|review|approve|close|x)",
        field in "[a-z_]{1,8}",
        value in prop_oneof![Just("1".to_string()), Just("null".to_string()), Just("[]".to_string()), "\"[a-f0-9]{0,70}\""],
    ) {
        let text = format!(r#"{{"v":1,"event":"{kind}","{field}":{value}}}"#);
        let _ = Event::decode(&text);
    }

    #[test]
    fn every_event_written_reads_back(event in event()) {
        let text = event.encode().unwrap();
        prop_assert!(text.len() < MAX_TEXT_BYTES + 4096);
        prop_assert!(!text.contains('\n'));
        prop_assert_eq!(Event::decode(&text).unwrap(), Some(event));
    }
}
