//! The one place where a bucket's object keys and bodies are read and
//! written: every request to the store (a read whole or of a range, a
//! write plain or conditional, a multipart upload, a listing, a stat, a
//! delete) goes through [`Objects`], and no other file names the client
//! (opendal's `Operator`, its readers and writers). An encrypted
//! repository's keys and bodies are changed here alone (`sealing` says
//! how); the rest of the crate speaks of keys in the layout of
//! docs/object-storage.md and of bodies as DMV writes them. A sealed body
//! that does not open is an error of the client's kind whose message
//! `Target::classify` recognises (`error::UNOPENED`).
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
use std::sync::Arc;

use dmv_store::{trace, ObjectId};
use opendal::Operator;

use crate::error::{lost_race, UNOPENED};
use crate::sealing::{Sealing, Unopened, HEADER_RANGE};
use crate::url::Conn;

/// A bucket's objects, through one of the connection's clients. Cheap to
/// clone (into each task that makes requests).
#[derive(Clone)]
pub(crate) struct Objects {
    op: Operator,
    /// The repository key, if the repository is encrypted.
    sealing: Option<Arc<Sealing>>,
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
            sealing: conn.sealing.clone(),
        }
    }

    /// Requests whose calls may take minutes (a part of a pack at the
    /// speed of the uplink): the packs and indexes a push uploads.
    pub fn for_uploads(conn: &Conn) -> Objects {
        Objects {
            op: conn.upload_op.clone(),
            sealing: conn.sealing.clone(),
        }
    }

    /// The name a listing of `packs/` gives the pack with this sum: the sum
    /// itself, or in an encrypted repository its token.
    pub fn listed_pack_name(&self, pack: &ObjectId) -> ObjectId {
        match &self.sealing {
            Some(s) => s.pack_token(pack),
            None => *pack,
        }
    }

    /// The pack name ([`Objects::listed_pack_name`]) of a listed key, if
    /// it is a pack's index.
    pub fn listed_index(&self, key: &str) -> Option<ObjectId> {
        match &self.sealing {
            Some(_) => Sealing::index_token(key),
            None => crate::layout::pack_of_index_name(key),
        }
    }

    /// Whether a listed key is a pack's body.
    pub fn is_pack_body(&self, key: &str) -> bool {
        match &self.sealing {
            Some(_) => Sealing::is_pack_body(key),
            None => key.ends_with(".pack"),
        }
    }

    /// The key the store knows the object by, and whether its body is sealed.
    fn stored(&self, key: &str) -> (String, Option<&Sealing>) {
        match &self.sealing {
            Some(s) if Sealing::seals(key) => (s.stored_key(key), Some(s.as_ref())),
            _ => (key.to_string(), None),
        }
    }

    /// The object's length and version (an encrypted repository's: the
    /// sealed length, a bound on the body's).
    pub async fn stat(&self, key: &str) -> opendal::Result<Stat> {
        let (key, sealing) = self.stored(key);
        let meta = self.op.stat(&key).await?;
        if let Some(s) = sealing {
            s.listed(&key, meta.content_length());
        }
        Ok(Stat {
            len: meta.content_length(),
            etag: meta.etag().map(str::to_string),
        })
    }

    /// The whole body.
    pub async fn get(&self, key: &str) -> opendal::Result<Vec<u8>> {
        let (key, sealing) = self.stored(key);
        let body = received(self.op.read(&key).await?.to_vec());
        opened(sealing, &key, body)
    }

    /// The bytes `range` of the body (one ranged GET; an encrypted pack's
    /// range fetches only the segments holding it, and the first time its
    /// header). An encrypted object other than a pack is read whole, and
    /// what of `range` lies within it is given.
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> opendal::Result<Vec<u8>> {
        let (key, sealing) = self.stored(key);
        let Some(s) = sealing else {
            return Ok(received(
                self.op.read_with(&key).range(range).await?.to_vec(),
            ));
        };
        if !Sealing::is_pack_body(&key) {
            let body = opened(sealing, &key, received(self.op.read(&key).await?.to_vec()))?;
            let end = (range.end.min(body.len() as u64)) as usize;
            let start = (range.start as usize).min(end);
            return Ok(body[start..end].to_vec());
        }
        let plan = match s.plan_range(&key, range.clone()).map_err(error)? {
            Some(plan) => plan,
            None => {
                s.stat_seen(&key, self.op.stat(&key).await?.content_length());
                s.plan_range(&key, range.clone())
                    .map_err(error)?
                    .ok_or_else(|| error(unknown_length(&key)))?
            }
        };
        match self.fetch_range(&key, s, &plan).await {
            // A header remembered from before the pack was sealed anew (a
            // rewrite after a rotation): forgotten, and fetched again once.
            Err(_) if plan.remembered_header() => {
                s.forget(&key);
                s.stat_seen(&key, self.op.stat(&key).await?.content_length());
                let plan = s
                    .plan_range(&key, range)
                    .map_err(error)?
                    .ok_or_else(|| error(unknown_length(&key)))?;
                self.fetch_range(&key, s, &plan).await
            }
            done => done,
        }
    }

    /// Fetches and opens what `plan` says of the pack at stored `key`.
    async fn fetch_range(
        &self,
        key: &str,
        s: &Sealing,
        plan: &crate::sealing::RangePlan,
    ) -> opendal::Result<Vec<u8>> {
        let header = match plan.header_apart {
            true => Some(received(
                self.op.read_with(key).range(HEADER_RANGE).await?.to_vec(),
            )),
            false => None,
        };
        let fetched = received(
            self.op
                .read_with(key)
                .range(plan.fetch.clone())
                .await?
                .to_vec(),
        );
        s.open_range(key, plan, header.as_deref(), fetched)
            .map_err(error)
    }

    /// The epoch of the key that sealed the object at stored `key` (read
    /// from its header, 25 bytes; nothing is opened).
    pub async fn sealed_epoch(&self, key: &str) -> opendal::Result<u32> {
        let header = received(self.op.read_with(key).range(HEADER_RANGE).await?.to_vec());
        dmv_crypt::Header::parse(&header)
            .map(|h| h.epoch())
            .map_err(|e| {
                error(Unopened {
                    key: key.to_string(),
                    detail: e.to_string(),
                })
            })
    }

    /// The whole body, if the object is still at version `etag` (else the
    /// store's "precondition failed").
    pub async fn get_if_match(&self, key: &str, etag: &str) -> opendal::Result<Vec<u8>> {
        let (key, sealing) = self.stored(key);
        let body = received(self.op.read_with(&key).if_match(etag).await?.to_vec());
        opened(sealing, &key, body)
    }

    /// Writes (or replaces) the object.
    pub async fn put(&self, key: &str, body: Vec<u8>) -> opendal::Result<()> {
        let (key, body) = self.sealed(key, body)?;
        self.op.write(&key, body).await.map(|_| ())
    }

    /// Creates the object unless one exists (`If-None-Match: *`). False:
    /// one existed, or another writer's conditional write won.
    pub async fn put_if_absent(&self, key: &str, body: Vec<u8>) -> opendal::Result<bool> {
        let (key, body) = self.sealed(key, body)?;
        won(self.op.write_with(&key, body).if_not_exists(true).await)
    }

    /// The stored key and body of a write (its bytes counted as sent:
    /// what fails is mostly sent too, and is sent again).
    fn sealed(&self, key: &str, body: Vec<u8>) -> opendal::Result<(String, Vec<u8>)> {
        let (key, body) = match self.stored(key) {
            (key, Some(s)) => {
                let body = s.seal(&key, &body).map_err(error)?;
                // Its header is new: what was remembered of the old is not.
                s.forget(&key);
                (key, body)
            }
            (key, None) => (key, body),
        };
        trace::count_sent(body.len() as u64);
        Ok((key, body))
    }

    /// Replaces the object if it is still at version `etag` (`If-Match`).
    /// False: it changed, or another writer's conditional write won.
    pub async fn put_if_match(
        &self,
        key: &str,
        body: Vec<u8>,
        etag: &str,
    ) -> opendal::Result<bool> {
        let (key, body) = self.sealed(key, body)?;
        won(self.op.write_with(&key, body).if_match(etag).await)
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

    /// Every object under `prefix`, at any depth (a rewrite's listing),
    /// as [`Objects::list`] gives them.
    pub async fn list_all(&self, prefix: &str) -> opendal::Result<Vec<Listed>> {
        self.listing(prefix, true).await
    }

    /// The objects whose keys start with `prefix` (a "directory": one
    /// level, as the store lists it), without the directory markers. The
    /// keys are as stored (an encrypted repository's: keyed names, which
    /// the other calls take as they are); the lengths too.
    pub async fn list(&self, prefix: &str) -> opendal::Result<Vec<Listed>> {
        self.listing(prefix, false).await
    }

    async fn listing(&self, prefix: &str, recursive: bool) -> opendal::Result<Vec<Listed>> {
        let listed: Vec<Listed> = self
            .op
            .list_with(prefix)
            .recursive(recursive)
            .await?
            .into_iter()
            .filter(|e| !e.path().ends_with('/'))
            .map(|e| Listed {
                len: e.metadata().content_length(),
                key: e.path().to_string(),
            })
            .collect();
        // A pack's sealed length, learnt here, spares a stat before its range reads.
        if let Some(s) = &self.sealing {
            listed.iter().for_each(|e| s.listed(&e.key, e.len));
        }
        Ok(listed)
    }

    /// Deletes the object (already gone is fine).
    pub async fn delete(&self, key: &str) -> opendal::Result<()> {
        self.op.delete(&self.stored(key).0).await
    }

    /// Starts a multipart upload of the object, `len` bytes sent in parts
    /// of `part_size`, up to `concurrent` of them at once; it appears only
    /// once [`Upload::finish`] succeeds.
    pub async fn put_parts(
        &self,
        key: &str,
        len: u64,
        part_size: usize,
        concurrent: usize,
    ) -> opendal::Result<Upload> {
        let (key, sealing) = self.stored(key);
        let sealer = match sealing {
            Some(s) => Some(s.sealer(&key, len).map_err(error)?),
            None => None,
        };
        let writer = self
            .op
            .writer_with(&key)
            .concurrent(concurrent)
            .chunk(part_size)
            .await?;
        Ok(Upload { writer, sealer })
    }
}

/// A body as the store sent it, counted (`DMV_TRACE`'s bytes received are
/// the wire's, sealed or not).
fn received(body: Vec<u8>) -> Vec<u8> {
    trace::count_received(body.len() as u64);
    body
}

/// The body as stored, opened if it is sealed.
fn opened(sealing: Option<&Sealing>, key: &str, body: Vec<u8>) -> opendal::Result<Vec<u8>> {
    match sealing {
        Some(s) => s.open(key, &body).map_err(error),
        None => Ok(body),
    }
}

/// A body that did not open (or seal), as the client's error (see the file's comment).
fn error(e: Unopened) -> opendal::Error {
    opendal::Error::new(
        opendal::ErrorKind::Unexpected,
        format!("{UNOPENED}{}: {}", e.key, e.detail),
    )
}

fn unknown_length(key: &str) -> Unopened {
    Unopened {
        key: key.to_string(),
        detail: "its length is unknown".into(),
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
    /// An encrypted repository's: the body is sealed as it goes.
    sealer: Option<dmv_crypt::Sealer<Vec<u8>>>,
}

impl Upload {
    /// Sends the next bytes of the body (a part goes out once it is full).
    /// Gives back `part`'s buffer when it was only read (sealed), for the
    /// caller's next part: a fresh one would be faulted in page by page.
    pub async fn put_part(&mut self, mut part: Vec<u8>) -> opendal::Result<Option<Vec<u8>>> {
        let Some(sealer) = &mut self.sealer else {
            trace::count_sent(part.len() as u64);
            return self.writer.write(part).await.map(|()| None);
        };
        // Room for the sealed part at once, not grown by doubling.
        let segments = part.len().div_ceil(dmv_crypt::SEGMENT_LEN as usize) + 1;
        let sealed_len =
            part.len() + segments * dmv_crypt::TAG_LEN as usize + dmv_crypt::HEADER_LEN as usize;
        sealer.get_mut().reserve(sealed_len);
        std::io::Write::write_all(sealer, &part)
            .map_err(|e| opendal::Error::new(opendal::ErrorKind::Unexpected, e.to_string()))?;
        let sealed = std::mem::take(sealer.get_mut());
        trace::count_sent(sealed.len() as u64);
        self.writer.write(sealed).await?;
        part.clear();
        Ok(Some(part))
    }

    /// Sends what is left and completes the upload: the object appears.
    pub async fn finish(&mut self) -> opendal::Result<()> {
        if let Some(sealer) = self.sealer.take() {
            let rest = sealer
                .finish()
                .map_err(|e| opendal::Error::new(opendal::ErrorKind::Unexpected, e.to_string()))?;
            trace::count_sent(rest.len() as u64);
            self.writer.write(rest).await?;
        }
        self.writer.close().await.map(|_| ())
    }

    /// Abandons the upload (its parts are discarded).
    pub async fn abort(&mut self) -> opendal::Result<()> {
        self.writer.abort().await
    }
}
