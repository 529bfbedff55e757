//! What a receiver of location pieces does with them, on either end of
//! the wire: spooling a run of another replica's log and merging it, and
//! naming the replicas that hold a file.

use std::collections::BTreeMap;

use dmv_repo::store::ObjectId;
use dmv_repo::{
    LocationNews, LocationRecord, LocationSpool, ReplicaCards, ReplicaId, Repository, TreeClaim,
};

use crate::{SyncError, SyncResult, Violation};

/// The replicas the location log says hold each of `ids` (other than this
/// one), by the name of the remote that reaches them here, else the name
/// they gave themselves, else their id. Ids no one is known to hold are left out.
pub(crate) fn holder_names(
    repo: &Repository,
    ids: &[ObjectId],
) -> SyncResult<BTreeMap<ObjectId, Vec<String>>> {
    let wanted: std::collections::HashSet<ObjectId> = ids.iter().copied().collect();
    let log = repo
        .copies()
        .locations_where(|r| wanted.contains(&r.key) && r.stamp.present)?;
    let me = repo.copies().replica_id()?;
    let remotes: BTreeMap<&str, &str> = repo
        .config
        .remotes
        .iter()
        .flat_map(|(n, c)| c.urls().map(move |u| (u, n.as_str())))
        .collect();
    let known = repo.copies().known_replicas()?;
    let name_of = |id: &ReplicaId| -> String {
        let url = known.get(id);
        let name = match url.and_then(|u| remotes.get(u.as_str())) {
            Some(remote) => remote.to_string(),
            None => log
                .cards
                .get(id)
                .map(|(_, c)| c.name.clone())
                .or_else(|| url.cloned())
                .unwrap_or_else(|| id.to_string()),
        };
        match log.cards.get(id).is_some_and(|(_, c)| c.metered) {
            true => format!("{name} (metered)"),
            false => name,
        }
    };
    let mut out: BTreeMap<ObjectId, Vec<String>> = BTreeMap::new();
    for r in log.iter().filter(|r| r.replica != me) {
        out.entry(r.key).or_default().push(name_of(&r.replica));
    }
    Ok(out)
}

/// Pieces of another replica's log in key order, spooled to disk until
/// merged in one pass.
pub(crate) struct LocationRun {
    spool: LocationSpool,
    cards: ReplicaCards,
    /// The order of the last record spooled: a page that starts at or before it starts a new run.
    pub(crate) last: Option<(ObjectId, ReplicaId)>,
    /// Claims that stand for records the spool leaves out.
    pub(crate) claims: Vec<TreeClaim>,
    /// Records spooled.
    count: usize,
}

impl LocationRun {
    pub(crate) fn new(repo: &Repository) -> SyncResult<LocationRun> {
        Ok(LocationRun {
            spool: LocationSpool::new(repo)?,
            cards: BTreeMap::new(),
            last: None,
            claims: Vec::new(),
            count: 0,
        })
    }

    /// Refuses a record that does not follow the last one: the merge reads the run as sorted.
    pub(crate) fn add(
        &mut self,
        records: &mut dyn Iterator<Item = LocationRecord>,
        cards: ReplicaCards,
    ) -> SyncResult<()> {
        for record in records {
            if self.last.is_some_and(|last| record.order() <= last) {
                return Err(SyncError::Protocol(Violation::LocationsOutOfOrder));
            }
            self.spool.push(&record)?;
            self.count += 1;
            self.last = Some(record.order());
        }
        self.cards.extend(cards);
        Ok(())
    }

    /// [`LocationRun::merge`], except that a few records whose cards are
    /// no news are noted in the journal (see [`Copies::merge_few_locations`](dmv_repo::Copies::merge_few_locations)).
    pub(crate) fn merge_or_note(self, repo: &Repository) -> SyncResult<usize> {
        if self.count > dmv_repo::MERGED_FROM_RECORDS || !self.claims.is_empty() {
            return self.merge(repo);
        }
        let records = self.spool.records()?.collect::<Result<Vec<_>, _>>()?;
        Ok(repo.copies().merge_few_locations(records, &self.cards)?)
    }

    pub(crate) fn merge(self, repo: &Repository) -> SyncResult<usize> {
        let (changed, _) =
            repo.copies()
                .merge_spooled_locations(self.spool, &self.claims, &self.cards, false)?;
        Ok(changed)
    }

    /// [`LocationRun::merge`], with what this replica knows that the run did not.
    pub(crate) fn merge_with_news(self, repo: &Repository) -> SyncResult<(usize, LocationNews)> {
        Ok(repo
            .copies()
            .merge_spooled_locations(self.spool, &self.claims, &self.cards, true)?)
    }
}
