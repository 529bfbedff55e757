//! Ref moves under way, for the locks of a hub tier: several servers in
//! front of one bucket check a push against the locks and then swap the
//! ref table, and a lock taken through another server between the two was
//! granted while a push that changes its path still landed (3 of 12
//! trials). The bucket holds no lock that spans the two objects, so each
//! side announces itself to the other:
//!
//! - a server moving refs first writes `ref-moves/<token>` (holding when it
//!   expires), then lists the locks, checks, swaps, and removes it;
//! - a lock taker first creates its lock object, then waits until every
//!   move announced at that moment is over.
//!
//! Either the mover's listing comes after the lock object was created and
//! sees it (the push is refused), or the taker's listing sees the move and
//! answers only once it has landed: the lock then holds the pushed version.
//! An announcement a killed server left is ignored once it expires.

use std::time::{Duration, Instant};

use opendal::ErrorKind;

use crate::error::BucketResult;
use crate::objects::Objects;
use crate::refswap::now_ns;
use crate::url::Conn;

pub const REF_MOVES_PREFIX: &str = "ref-moves/";
/// How long an announced move may last (a check of the locks and a swap
/// of the ref table take seconds at most).
const MOVE_LEASE: Duration = Duration::from_secs(60);
/// How often a lock taker looks again at the moves it waits for.
const POLL: Duration = Duration::from_millis(50);

/// Announces a ref move; returns its key, for [`withdraw`].
pub(crate) fn announce(conn: &Conn) -> BucketResult<String> {
    let key = format!("{REF_MOVES_PREFIX}{}", crate::config::new_token());
    let expires = now_ns().saturating_add(MOVE_LEASE.as_nanos() as u64);
    let (objects, target, at) = (Objects::of(conn), conn.target.clone(), key.clone());
    conn.run("announcing a ref move", async move {
        objects
            .put(&at, expires.to_le_bytes().to_vec())
            .await
            .map(|_| ())
            .map_err(|e| target.classify(e, "announcing a ref move"))
    })?;
    Ok(key)
}

/// Ends a move [`announce`] began (already gone is fine).
pub(crate) fn withdraw(conn: &Conn, key: &str) -> BucketResult<()> {
    let (objects, target, key) = (Objects::of(conn), conn.target.clone(), key.to_string());
    conn.run("ending a ref move", async move {
        objects
            .delete(&key)
            .await
            .map_err(|e| target.classify(e, "ending a ref move"))
    })
}

/// Waits until every ref move announced now has ended or expired.
pub(crate) fn wait_for_moves(conn: &Conn) -> BucketResult<()> {
    let started = Instant::now();
    let (objects, target) = (Objects::of(conn), conn.target.clone());
    conn.run("waiting for ref moves", async move {
        let entries = objects
            .list(REF_MOVES_PREFIX)
            .await
            .map_err(|e| target.classify(e, "listing ref moves"))?;
        let mut waiting: Vec<String> = entries.into_iter().map(|e| e.key).collect();
        while !waiting.is_empty() && started.elapsed() < MOVE_LEASE {
            let mut still = Vec::new();
            for key in waiting {
                match objects.get(&key).await {
                    Ok(bytes) => {
                        let expires = bytes.try_into().map(u64::from_le_bytes).unwrap_or(0);
                        if expires > now_ns() {
                            still.push(key);
                        } else {
                            // A killed mover's: nobody else will remove it.
                            let _ = objects.delete(&key).await;
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(target.classify(e, "reading a ref move")),
                }
            }
            waiting = still;
            if !waiting.is_empty() {
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    })
}
