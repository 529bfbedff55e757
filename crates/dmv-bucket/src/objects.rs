//! The one place where a bucket's object keys and bodies are read and
//! written: every request to the store (a read whole or of a range, a
//! write plain or conditional, a multipart upload, a listing, a stat, a
//! delete) goes through [`Objects`], and no other file names the client
//! (opendal's `Operator`, its readers and writers). So a remote whose keys
//! are keyed names and whose bodies are sealed (issue 68) changes keys and
//! bodies here alone; the rest of the crate speaks of keys in the layout of
//! docs/object-storage.md and of bodies as DMV writes them.
//!
//! Each method is one request as the client makes it (with the retries and
//! timeouts `url` gave it), and answers with the client's error, unsorted:
//! the caller knows what it was doing, so it decides which failure is an
//! answer (a missing object, a lost race) and sorts the rest
//! (`Target::classify`). The conditional writes are the exception: losing
//! the race is their answer (`Ok(false)`), the same for every caller.
//! Requests are made only in tasks on the connection's runtime
//! (`Conn::run`), so the methods are `async`.

use std::ops::Range;

use opendal::Operator;

use crate::error::lost_race;
use crate::url::Conn;

/// A bucket's objects, through one of the connection's clients. Cheap to
/// clone (into each task that makes requests).
#[derive(Clone)]
pub(crate) struct Objects {
    op: Operator,
}

/// What a stat says of an object.
#[derive(Clone, Debug)]
pub(crate) struct Stat {
    /// The body's length in bytes.
    pub len: u64,
    /// The version a conditional read or write names (None: the store gives none).
    pub etag: Option<String>,
}

/// One object a listing found.
#[derive(Clone, Debug)]
pub(crate) struct Listed {
    /// Its full key (under the repository's prefix), as the other calls take it.
    pub key: String,
    /// Its length in bytes, as the listing says.
    pub len: u64,
}

impl Objects {
    /// Requests that bound each call by the connection's stall time: all
    /// but uploads.
    pub fn of(conn: &Conn) -> Objects {
        Objects {
            op: conn.op.clone(),
        }
    }

    /// Requests whose calls may take minutes (a part of a pack at the
    /// speed of the uplink): the packs and indexes a push uploads.
    pub fn for_uploads(conn: &Conn) -> Objects {
        Objects {
            op: conn.upload_op.clone(),
        }
    }

    /// The object's length and version.
    pub async fn stat(&self, key: &str) -> opendal::Result<Stat> {
        let meta = self.op.stat(key).await?;
        Ok(Stat {
            len: meta.content_length(),
            etag: meta.etag().map(str::to_string),
        })
    }

    /// The whole body.
    pub async fn get(&self, key: &str) -> opendal::Result<Vec<u8>> {
        Ok(self.op.read(key).await?.to_vec())
    }

    /// The bytes `range` of the body (one ranged GET).
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> opendal::Result<Vec<u8>> {
        Ok(self.op.read_with(key).range(range).await?.to_vec())
    }

    /// The whole body, if the object is still at version `etag` (else the
    /// store's "precondition failed").
    pub async fn get_if_match(&self, key: &str, etag: &str) -> opendal::Result<Vec<u8>> {
        Ok(self.op.read_with(key).if_match(etag).await?.to_vec())
    }

    /// Writes (or replaces) the object.
    pub async fn put(&self, key: &str, body: Vec<u8>) -> opendal::Result<()> {
        self.op.write(key, body).await.map(|_| ())
    }

    /// Creates the object unless one exists (`If-None-Match: *`). False:
    /// one existed, or another writer's conditional write won.
    pub async fn put_if_absent(&self, key: &str, body: Vec<u8>) -> opendal::Result<bool> {
        won(self.op.write_with(key, body).if_not_exists(true).await)
    }

    /// Replaces the object if it is still at version `etag` (`If-Match`).
    /// False: it changed, or another writer's conditional write won.
    pub async fn put_if_match(
        &self,
        key: &str,
        body: Vec<u8>,
        etag: &str,
    ) -> opendal::Result<bool> {
        won(self.op.write_with(key, body).if_match(etag).await)
    }

    /// Compare-and-swap: writes the object if it is still at `version`
    /// ([`Objects::put_if_match`]), or, with None, if there is none
    /// ([`Objects::put_if_absent`]).
    pub async fn swap(
        &self,
        key: &str,
        body: Vec<u8>,
        version: Option<&str>,
    ) -> opendal::Result<bool> {
        match version {
            Some(etag) => self.put_if_match(key, body, etag).await,
            None => self.put_if_absent(key, body).await,
        }
    }

    /// The objects whose keys start with `prefix` (a "directory": one
    /// level, as the store lists it), without the directory markers.
    pub async fn list(&self, prefix: &str) -> opendal::Result<Vec<Listed>> {
        Ok(self
            .op
            .list_with(prefix)
            .await?
            .into_iter()
            .filter(|e| !e.path().ends_with('/'))
            .map(|e| Listed {
                len: e.metadata().content_length(),
                key: e.path().to_string(),
            })
            .collect())
    }

    /// Deletes the object (already gone is fine).
    pub async fn delete(&self, key: &str) -> opendal::Result<()> {
        self.op.delete(key).await
    }

    /// Starts a multipart upload of the object, sent in parts of
    /// `part_size`, up to `concurrent` of them at once; it appears only
    /// once [`Upload::finish`] succeeds.
    pub async fn put_parts(
        &self,
        key: &str,
        part_size: usize,
        concurrent: usize,
    ) -> opendal::Result<Upload> {
        let writer = self
            .op
            .writer_with(key)
            .concurrent(concurrent)
            .chunk(part_size)
            .await?;
        Ok(Upload { writer })
    }
}

/// A conditional write's answer: a lost race is "not written", not an error.
fn won<T>(written: opendal::Result<T>) -> opendal::Result<bool> {
    match written {
        Ok(_) => Ok(true),
        Err(e) if lost_race(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A multipart upload under way ([`Objects::put_parts`]): the body streams
/// through it part by part, never whole in memory.
pub(crate) struct Upload {
    writer: opendal::Writer,
}

impl Upload {
    /// Sends the next bytes of the body (a part goes out once it is full).
    pub async fn put_part(&mut self, part: Vec<u8>) -> opendal::Result<()> {
        self.writer.write(part).await
    }

    /// Sends what is left and completes the upload: the object appears.
    pub async fn finish(&mut self) -> opendal::Result<()> {
        self.writer.close().await.map(|_| ())
    }

    /// Abandons the upload (its parts are discarded).
    pub async fn abort(&mut self) -> opendal::Result<()> {
        self.writer.abort().await
    }
}
