//! Who a hub's new comments mention: when a review log moves on a hub
//! (a push, a comment from a page), the comments and replies it brings
//! that name people (`@ann`) are told, so a server can pass them on (its
//! audit log and webhooks) to the people named.

use std::collections::HashMap;

use dmv_repo::store::ObjectId;
use serde::Serialize;

use crate::board::mentions;
use crate::error::ReviewResult;
use crate::event::Event;
use crate::protect::{log_after_move, ReviewedHub};

/// Mentions told of one move of a log, at most: a first push of a long
/// log tells its newest this many, and how many more there were.
pub const MAX_MENTIONS_TOLD: usize = 100;

/// A comment or a reply that names people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mention {
    /// The comment's or the reply's id.
    pub id: ObjectId,
    /// Its writer's name.
    pub by: String,
    /// The file commented on (a reply's comment's file).
    pub path: String,
    /// The names mentioned, in order, once each.
    pub names: Vec<String>,
    /// What it says.
    pub text: String,
}

/// The comments and replies that the move of a hub's review log from
/// `old` to `new` brings and that mention someone, oldest first: the
/// newest [`MAX_MENTIONS_TOLD`] of them, and how many more there were.
pub fn mentions_brought(
    hub: &impl ReviewedHub,
    old: Option<ObjectId>,
    new: ObjectId,
) -> ReviewResult<(Vec<Mention>, usize)> {
    let (entries, held) = log_after_move(hub, old, new)?;
    let mut path_of: HashMap<ObjectId, String> = HashMap::new();
    let mut told = Vec::new();
    for entry in entries {
        // An entry that does not read is skipped by every reader: it names nobody.
        let Ok(Some(Event::Comment {
            file,
            text,
            reply_to,
            ..
        })) = Event::decode(&entry.text)
        else {
            continue;
        };
        let path = match reply_to {
            None => {
                path_of.insert(entry.id, file.path.clone());
                file.path
            }
            Some(to) => match path_of.get(&to) {
                Some(path) => path.clone(),
                None => continue,
            },
        };
        if held.contains(&entry.id) {
            continue;
        }
        let names = mentions(&text);
        if !names.is_empty() {
            told.push(Mention {
                id: entry.id,
                by: entry.author.name,
                path,
                names,
                text,
            });
        }
    }
    let more = told.len().saturating_sub(MAX_MENTIONS_TOLD);
    told.drain(..more);
    Ok((told, more))
}
