//! The address book that travels: a replica publishes URLs it can be reached
//! at (`dmv replica --publish`), and declares itself metered, in its card,
//! which rides in every location log it sends (dmv-repo's `locations.rs`).
//! So a tablet whose only remote is the hub learns where the laptop that
//! holds a file listens, and fetches from it without configuring it.
//!
//! A published URL is another replica's word, and hostile until checked: only
//! `http(s)://` and `ssh://` URLs are published or used (a path names nothing
//! on another machine, and an object store's credentials are the reader's own
//! business), never with a password, a query or a fragment (where tokens
//! hide), and a connection to one sends none of this user's credentials
//! (not `DMV_TOKEN`). What comes back is checked like anything received: by hash.

use std::collections::{BTreeMap, BTreeSet};

use dmv_repo::store::ObjectId;
use dmv_repo::{ReplicaId, Repository, MAX_PUBLISHED_URLS};

use crate::operations::named_remotes::stall_after;
use crate::operations::remote_spec::{RemoteSpec, Transport};
use crate::AddressError;
use crate::{SyncError, SyncResult};

/// Adds `url` to the URLs this replica publishes. Returns them all.
pub fn publish(repo: &mut Repository, url: &str) -> SyncResult<Vec<String>> {
    check_publishable(url)?;
    let url = url.trim_end_matches('/').to_string();
    repo.update_config(|c| {
        if !c.publish.contains(&url) {
            if c.publish.len() >= MAX_PUBLISHED_URLS {
                return Err(SyncError::Address(AddressError::BadUrl {
                    url: url.clone(),
                    why: format!("a replica publishes at most {MAX_PUBLISHED_URLS} URLs"),
                }));
            }
            c.publish.push(url.clone());
        }
        Ok(c.publish.clone())
    })
}

/// Stops publishing `url`. Returns whether it was published.
pub fn unpublish(repo: &mut Repository, url: &str) -> SyncResult<bool> {
    let url = url.trim_end_matches('/');
    repo.update_config(|c| {
        let before = c.publish.len();
        c.publish.retain(|u| u != url);
        Ok::<_, SyncError>(c.publish.len() != before)
    })
}

/// Declares this replica metered (others do not pull file data from it
/// unless they name it), or no longer metered.
pub fn set_metered(repo: &mut Repository, metered: bool) -> SyncResult<()> {
    repo.update_config(|c| {
        c.metered = metered;
        Ok::<_, SyncError>(())
    })
}

/// Refuses what may not be published: anything but `http(s)://` and
/// `ssh://`, and a URL carrying a password, a query or a fragment.
pub fn check_publishable(url: &str) -> SyncResult<()> {
    let refuse = |why: &str| {
        Err(SyncError::Address(AddressError::BadUrl {
            url: url.to_string(),
            why: why.to_string(),
        }))
    };
    if url.len() > dmv_repo::MAX_PUBLISHED_URL_LEN || url.chars().any(char::is_control) {
        return refuse("too long, or holds control characters");
    }
    let transport = RemoteSpec::parse(url)?.transport;
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    match transport {
        Transport::Http { .. } | Transport::Ssh { .. } => {}
        _ => return refuse("only http://, https:// and ssh:// URLs are published: a path or a bucket means nothing to another replica"),
    }
    if authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
    {
        return refuse("a published URL travels to every replica: it may not hold a password (each reader uses its own credentials)");
    }
    if url.contains('?') || url.contains('#') {
        return refuse("a published URL may not hold a query or a fragment (tokens hide there)");
    }
    Ok(())
}

/// How to connect to a URL another replica published: none of this user's
/// credentials go with it, and this repository's `remote.timeout` bounds it.
pub(crate) fn stranger_spec(repo: &Repository, url: &str) -> SyncResult<RemoteSpec> {
    check_publishable(url)?;
    let mut spec = RemoteSpec::parse(url)?;
    spec.stranger = true;
    spec.stall_after = stall_after(repo, spec.stall_after);
    Ok(spec)
}

/// A replica the location log says holds some of the wanted data and that
/// no configured remote reaches, with the URLs it publishes.
pub(crate) struct Published {
    /// The name it gave itself.
    pub name: String,
    /// Where it listens.
    pub urls: Vec<String>,
}

/// What the log tells of the replicas holding any of `wanted` (file
/// versions, each with a path naming it): those reachable only through the
/// URLs they publish, and the names of the metered ones (configured or
/// not), whose data is not pulled unless they are named. Only the records
/// of `wanted` and of replicas that could be asked are read (see
/// [`dmv_repo::Copies::locations_of`]): a `get` of one file reads that
/// file's records, not every file of the trees the log claims.
pub(crate) fn holders_to_ask(
    repo: &Repository,
    wanted: &BTreeMap<ObjectId, Vec<u8>>,
) -> SyncResult<(Vec<Published>, BTreeSet<String>)> {
    let me = repo.copies().replica_id()?;
    let configured = configured_replicas(repo)?;
    // A holder counts only when it publishes a URL and is neither this
    // replica, a configured remote, nor metered (see below).
    let log = repo.copies().locations_of(wanted, |replica, cards| {
        *replica != me
            && !configured.contains_key(replica)
            && cards.get(replica).is_some_and(|(_, card)| {
                !card.metered && card.urls.iter().any(|u| check_publishable(u).is_ok())
            })
    })?;
    let holders: BTreeSet<ReplicaId> = log
        .records
        .iter()
        .filter(|(_, stamp)| stamp.present)
        .map(|((_, replica), _)| *replica)
        .collect();
    let mut published = Vec::new();
    for id in &holders {
        let card = log
            .cards
            .get(id)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        if configured.contains_key(id) || card.metered {
            continue;
        }
        let urls: Vec<String> = card
            .urls
            .into_iter()
            .filter(|u| check_publishable(u).is_ok())
            .collect();
        if !urls.is_empty() {
            published.push(Published {
                name: card.name,
                urls,
            });
        }
    }
    let metered = configured
        .iter()
        .filter(|(id, _)| log.cards.get(id).is_some_and(|(_, c)| c.metered))
        .map(|(_, name)| name.clone())
        .collect();
    Ok((published, metered))
}

/// The configured remotes by the replica each was last found to be.
fn configured_replicas(repo: &Repository) -> SyncResult<BTreeMap<ReplicaId, String>> {
    let by_url: BTreeMap<&str, &str> = repo
        .config
        .remotes
        .iter()
        .flat_map(|(n, c)| c.urls().map(move |u| (u, n.as_str())))
        .collect();
    Ok(repo
        .copies()
        .known_replicas()?
        .into_iter()
        .filter_map(|(id, url)| Some((id, by_url.get(url.as_str())?.to_string())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reachable_urls_without_credentials_are_published() {
        for good in [
            "https://laptop.example:8443/photos",
            "http://10.0.0.5:8080/photos",
            "ssh://alice@laptop/srv/photos",
            "ssh://laptop:2222/srv/photos",
        ] {
            assert!(
                check_publishable(good).is_ok(),
                "{good} should be publishable"
            );
        }
        for bad in [
            "https://alice:secret@laptop/photos",
            "ssh://alice:secret@laptop/srv/photos",
            "https://laptop/photos?token=abc",
            "https://laptop/photos#token",
            "/home/alice/photos",
            "file:///home/alice/photos",
            "s3://bucket/photos",
            "ssh://-oProxyCommand=touch%20x/r",
            "https://laptop/photos\nssh://evil/x",
        ] {
            assert!(check_publishable(bad).is_err(), "{bad} should be refused");
        }
    }
}
