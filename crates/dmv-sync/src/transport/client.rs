//! The client's view of a remote: typed calls over any [`Wire`].

use std::io::{Read, Write};

use dmv_repo::store::{ChunkParams, ObjectId};
use dmv_repo::{LocationLog, LocationPages, ReplicaId, Tally, TreeClaim};

use crate::protocol::frame::{decode_message, Frame, FrameReader, FrameWriter};
use crate::protocol::{
    Request, Response, Verb, WireClaim, WireRefUpdate, LOCATIONS_PER_PIECE, MAX_IDS_PER_REQUEST,
    MAX_TREES_PER_CLAIMS_REQUEST, VERSION,
};
use crate::transport::remote::{
    KeepsCopies, KeepsPathLocks, LocationPageSink, ObjectProducer, PathLocks, Received, Remote,
    RemoteRefs,
};
use crate::TransportError;
use crate::{SyncError, SyncResult, Violation};

/// Writes a request's body (object frames) after the request itself.
pub type BodyWriter<'a> =
    &'a mut (dyn FnMut(&mut FrameWriter<&mut dyn Write>) -> SyncResult<()> + Send);

/// A way to carry one request and its answer: a pipe to `dmv serve --stdio`
/// (local or through ssh) or an HTTP request.
pub trait Wire: Send {
    fn exchange<'s>(
        &'s mut self,
        verb: Verb,
        request: &Request,
        body: Option<BodyWriter<'_>>,
    ) -> SyncResult<FrameReader<Box<dyn Read + 's>>>;
    /// Whether requests that write may be allowed (an HTTP server refuses
    /// them without a token: not worth an upload it would cut short).
    fn may_write(&self) -> bool {
        true
    }
    /// How long an answer may take to start before the wire gives up (an
    /// HTTP wire's stall bound), when the far side holds a request open
    /// for news (`WaitRefs`); None: it answers such a request at once.
    fn waits_up_to(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A DMV server reached through a `Wire`.
pub struct Client {
    wire: Box<dyn Wire>,
    url: String,
    chunking: ChunkParams,
    bare: bool,
    partial: bool,
}

fn unexpected(what: &'static str, got: &Response) -> SyncError {
    match got {
        Response::Error { message } => SyncError::Remote(message.clone()),
        other => SyncError::Protocol(Violation::Unexpected {
            expected: what,
            got: Some(format!("{other:?}")),
        }),
    }
}

fn read_response<R: Read>(frames: &mut FrameReader<R>) -> SyncResult<Response> {
    match frames.expect_frame()? {
        Frame::Message(bytes) => decode_message(&bytes),
        _ => Err(SyncError::Protocol(Violation::Unexpected {
            expected: "a response message",
            got: None,
        })),
    }
}

impl Client {
    /// Says hello and checks both sides speak the same protocol.
    pub fn connect(mut wire: Box<dyn Wire>, url: &str) -> SyncResult<Client> {
        let not_repo = |detail: String| {
            SyncError::Transport(TransportError::NotARepository {
                url: url.to_string(),
                detail,
            })
        };
        let response = {
            let mut frames =
                wire.exchange(Verb::Hello, &Request::Hello { version: VERSION }, None)?;
            read_response(&mut frames)?
        };
        match response {
            Response::Hello {
                version,
                chunking,
                bare,
                partial,
            } => {
                if version != VERSION {
                    return Err(SyncError::Transport(TransportError::Version {
                        remote: version,
                        local: VERSION,
                    }));
                }
                Ok(Client {
                    wire,
                    url: url.to_string(),
                    chunking,
                    bare,
                    partial,
                })
            }
            Response::Error { message } if message.starts_with("not a dmv repository") => {
                Err(not_repo(message))
            }
            other => Err(unexpected("hello", &other)),
        }
    }

    /// A `GetLocationClaims` answer: the claims, checked, once the pieces
    /// went to `each`; None from a server that does not know the request.
    fn claims_and_pieces(
        &mut self,
        request: &Request,
        trees: &[ObjectId],
        each: &mut LocationPageSink<'_>,
    ) -> SyncResult<Option<Vec<TreeClaim>>> {
        let mut frames = match self.wire.exchange(request.verb(), request, None) {
            Ok(frames) => frames,
            Err(SyncError::Transport(TransportError::NotARepository { .. })) => return Ok(None),
            Err(e) => return Err(e),
        };
        let claims = match read_response(&mut frames)? {
            Response::LocationClaims { claims } => claims,
            // A server from before claims were sent: no such request there.
            Response::Error { message } if message.contains("unknown request") => return Ok(None),
            other => return Err(unexpected("location claims", &other)),
        };
        let claims: Vec<TreeClaim> = claims.iter().map(WireClaim::claim).collect();
        dmv_repo::check_claims(&claims)
            .map_err(|e| SyncError::Protocol(Violation::BadLocationClaims(e)))?;
        if claims.iter().any(|c| !trees.contains(&c.tree)) {
            return Err(SyncError::Protocol(Violation::BadLocationClaims(
                "a claim of a tree not asked for",
            )));
        }
        take_location_pieces(&mut frames, each)?;
        Ok(Some(claims))
    }

    /// Sends `request` with `log`'s pages as its body; the answer.
    fn put_log(&mut self, request: &Request, mut log: LocationPages) -> SyncResult<Response> {
        let mut body = |w: &mut FrameWriter<&mut dyn Write>| -> SyncResult<()> {
            let lost = SyncError::connection_lost;
            while let Some(piece) = log.next_page(LOCATIONS_PER_PIECE)? {
                w.locations(&piece).map_err(lost)?;
            }
            w.end().map_err(lost)
        };
        let mut frames = self
            .wire
            .exchange(request.verb(), request, Some(&mut body))?;
        read_response(&mut frames)
    }

    fn call(&mut self, request: Request) -> SyncResult<Response> {
        let mut frames = self.wire.exchange(request.verb(), &request, None)?;
        read_response(&mut frames)
    }
}

impl Remote for Client {
    fn url(&self) -> &str {
        &self.url
    }

    fn chunking(&self) -> ChunkParams {
        self.chunking
    }

    fn bare(&self) -> bool {
        self.bare
    }

    fn may_lack_data(&self) -> bool {
        self.partial
    }

    fn takes_pieces_of_logs(&self) -> bool {
        self.wire.may_write()
    }

    fn wait_for_refs(&mut self, since: Option<[u8; 32]>) -> SyncResult<Option<[u8; 32]>> {
        let Some(stall) = self.wire.waits_up_to() else {
            return Ok(None);
        };
        // Answered before the wire would take the quiet for a stall.
        let seconds = match since {
            None => 0,
            Some(_) => (stall.as_secs().saturating_sub(5) as u32)
                .clamp(1, crate::protocol::MAX_WAIT_SECONDS),
        };
        match self.call(Request::WaitRefs {
            since: since.unwrap_or([0; 32]),
            seconds,
        }) {
            Ok(Response::RefsDigest { digest }) => Ok(Some(digest)),
            // A server from before waiting: no such request there.
            Err(SyncError::Transport(TransportError::NotARepository { .. })) => Ok(None),
            Ok(Response::Error { message }) if message.contains("unknown request") => Ok(None),
            Ok(other) => Err(unexpected("a digest of the refs", &other)),
            Err(e) => Err(e),
        }
    }

    fn list_refs(&mut self) -> SyncResult<RemoteRefs> {
        match self.call(Request::ListRefs)? {
            Response::Refs { refs, .. } if refs.len() > crate::protocol::MAX_REFS_PER_ANSWER => {
                Err(SyncError::Protocol(Violation::TooManyRefs {
                    listed: refs.len(),
                    limit: crate::protocol::MAX_REFS_PER_ANSWER,
                }))
            }
            Response::Refs { head, refs } => Ok(RemoteRefs { head, refs }),
            other => Err(unexpected("refs", &other)),
        }
    }

    fn walk_commits(
        &mut self,
        wants: Vec<ObjectId>,
        haves: Vec<ObjectId>,
    ) -> SyncResult<Vec<ObjectId>> {
        match self.call(Request::WalkCommits { wants, haves })? {
            Response::Commits { ids } => Ok(ids),
            other => Err(unexpected("commits", &other)),
        }
    }

    fn has(&mut self, ids: &[ObjectId]) -> SyncResult<Vec<bool>> {
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(MAX_IDS_PER_REQUEST) {
            match self.call(Request::Has {
                ids: batch.to_vec(),
            })? {
                Response::Has { present } if present.len() == batch.len() => out.extend(present),
                other => return Err(unexpected("has", &other)),
            }
        }
        Ok(out)
    }

    fn get(
        &mut self,
        ids: &[ObjectId],
        chunks: bool,
        sink: &mut dyn FnMut(Received) -> SyncResult<()>,
    ) -> SyncResult<()> {
        for batch in ids.chunks(MAX_IDS_PER_REQUEST) {
            let mut frames = self.wire.exchange(
                Verb::Get,
                &Request::Get {
                    ids: batch.to_vec(),
                    chunks,
                },
                None,
            )?;
            let mut expected = batch.iter();
            loop {
                let got = match frames.expect_frame()? {
                    Frame::End => break,
                    Frame::Object(obj) => Received::Object(obj),
                    Frame::ChunkStub { id, raw_len } => Received::ChunkStub { id, raw_len },
                    Frame::Message(bytes) => {
                        return Err(unexpected("objects", &decode_message(&bytes)?))
                    }
                    Frame::Locations(_) => {
                        return Err(SyncError::Protocol(Violation::Unexpected {
                            expected: "an object",
                            got: Some("a piece of a location log".into()),
                        }))
                    }
                };
                let id = match &got {
                    Received::Object(o) => o.id,
                    Received::ChunkStub { id, .. } => *id,
                };
                if expected.next() != Some(&id) {
                    return Err(SyncError::Protocol(Violation::NotAskedFor { id }));
                }
                sink(got)?;
            }
            if expected.next().is_some() {
                return Err(SyncError::Protocol(Violation::FewerThanAsked));
            }
        }
        Ok(())
    }

    fn put(&mut self, objects: ObjectProducer<'_>, sent: &Tally<'_>) -> SyncResult<(u64, u64)> {
        let mut body = |w: &mut FrameWriter<&mut dyn Write>| -> SyncResult<()> {
            let lost = SyncError::connection_lost;
            objects(&mut |obj| {
                w.object(obj).map_err(lost)?;
                sent.add(obj.payload.len() as u64);
                Ok(())
            })?;
            w.end().map_err(lost)
        };
        let mut frames = self
            .wire
            .exchange(Verb::Put, &Request::Put, Some(&mut body))?;
        match read_response(&mut frames)? {
            Response::Stored { objects, bytes } => Ok((objects, bytes)),
            other => Err(unexpected("stored", &other)),
        }
    }

    fn update_refs(
        &mut self,
        updates: Vec<WireRefUpdate>,
        who: &str,
        message: &str,
    ) -> SyncResult<()> {
        match self.call(Request::UpdateRefs {
            updates,
            who: who.into(),
            message: message.into(),
        })? {
            Response::RefsUpdated => Ok(()),
            Response::Rejected { name, found } => Err(SyncError::Rejected { name, found }),
            other => Err(unexpected("refs updated", &other)),
        }
    }

    fn replica(&mut self) -> SyncResult<(ReplicaId, String)> {
        match self.call(Request::Replica)? {
            Response::Replica { id, name } => Ok((ReplicaId(id), name)),
            other => Err(unexpected("replica", &other)),
        }
    }

    fn get_locations(&mut self, each: &mut LocationPageSink<'_>) -> SyncResult<()> {
        let mut frames = self
            .wire
            .exchange(Verb::GetLocations, &Request::GetLocations, None)?;
        take_location_pieces(&mut frames, each)
    }

    fn get_locations_claiming(
        &mut self,
        trees: &[ObjectId],
        each: &mut LocationPageSink<'_>,
    ) -> SyncResult<Vec<TreeClaim>> {
        if trees.is_empty() || trees.len() > MAX_TREES_PER_CLAIMS_REQUEST {
            return self.get_locations(each).map(|()| Vec::new());
        }
        let request = Request::GetLocationClaims {
            trees: trees.to_vec(),
        };
        match self.claims_and_pieces(&request, trees, each)? {
            Some(claims) => Ok(claims),
            None => self.get_locations(each).map(|()| Vec::new()),
        }
    }

    fn put_locations(&mut self, from: ReplicaId, log: LocationPages) -> SyncResult<()> {
        match self.put_log(&Request::PutLocations { from: from.0 }, log)? {
            Response::LocationsMerged => Ok(()),
            other => Err(unexpected("locations merged", &other)),
        }
    }

    fn put_location_claims(&mut self, from: ReplicaId, log: LocationPages) -> SyncResult<bool> {
        let request = Request::PutLocationClaims {
            from: from.0,
            claims: log.claims().iter().map(WireClaim::of).collect(),
        };
        match self.put_log(&request, log) {
            Ok(Response::LocationsMerged) => Ok(true),
            // Refused (claims of a tree it does not read, a bucket's server, an older server): nothing was merged.
            Ok(Response::Error { .. }) => Ok(false),
            // A server from before claims were put: no such request there.
            Err(SyncError::Transport(TransportError::NotARepository { .. })) => Ok(false),
            Ok(other) => Err(unexpected("locations merged", &other)),
            Err(e) => Err(e),
        }
    }

    fn copies(&mut self) -> SyncResult<&mut dyn KeepsCopies> {
        Ok(self)
    }

    fn path_locks(&mut self) -> SyncResult<&mut dyn KeepsPathLocks> {
        Ok(self)
    }
}

impl KeepsCopies for Client {
    fn lock_content(&mut self, ids: &[ObjectId], seconds: u64) -> SyncResult<(String, Vec<bool>)> {
        let (mut locks, mut held) = (Vec::new(), Vec::with_capacity(ids.len()));
        for batch in ids.chunks(MAX_IDS_PER_REQUEST) {
            match self.call(Request::LockContent {
                ids: batch.to_vec(),
                seconds,
            })? {
                Response::ContentLocked { lock, held: h } if h.len() == batch.len() => {
                    locks.push(lock);
                    held.extend(h);
                }
                other => return Err(unexpected("content locked", &other)),
            }
        }
        Ok((locks.join(","), held))
    }

    fn unlock_content(&mut self, lock: &str) -> SyncResult<()> {
        for lock in lock.split(',').filter(|l| !l.is_empty()) {
            match self.call(Request::UnlockContent {
                lock: lock.to_string(),
            })? {
                Response::Unlocked => {}
                other => return Err(unexpected("unlocked", &other)),
            }
        }
        Ok(())
    }

    fn drop_content(&mut self, ids: &[ObjectId]) -> SyncResult<(u64, Vec<ObjectId>)> {
        if ids.len() > MAX_IDS_PER_REQUEST {
            return Err(SyncError::Protocol(Violation::TooManyIds {
                asked: ids.len(),
                limit: MAX_IDS_PER_REQUEST,
            }));
        }
        match self.call(Request::DropContent { ids: ids.to_vec() })? {
            Response::ContentDropped {
                freed_bytes,
                locked,
            } => Ok((freed_bytes, locked)),
            other => Err(unexpected("content dropped", &other)),
        }
    }
}

impl KeepsPathLocks for Client {
    fn lock_paths(&mut self, paths: &[String], replica: &str, _me: &str) -> SyncResult<PathLocks> {
        self.call_locks(Request::LockPaths {
            paths: paths.to_vec(),
            replica: replica.to_string(),
        })
    }

    fn unlock_paths(&mut self, paths: &[String], force: bool, _me: &str) -> SyncResult<PathLocks> {
        self.call_locks(Request::UnlockPaths {
            paths: paths.to_vec(),
            force,
        })
    }

    fn list_locks(&mut self, _me: &str) -> SyncResult<PathLocks> {
        self.call_locks(Request::ListLocks)
    }
}

impl Client {
    fn call_locks(&mut self, request: Request) -> SyncResult<PathLocks> {
        match self.call(request)? {
            Response::PathLocks { you, locks } => Ok(PathLocks { you, locks }),
            other => Err(unexpected("locks", &other)),
        }
    }
}

/// Takes the locations frames of an answer, up to its `End` frame.
fn take_location_pieces(
    frames: &mut FrameReader<Box<dyn Read + '_>>,
    each: &mut LocationPageSink<'_>,
) -> SyncResult<()> {
    loop {
        match frames.expect_frame()? {
            Frame::End => return Ok(()),
            Frame::Locations(piece) => {
                let (mut records, names) = LocationLog::read_encoded(&piece)
                    .map_err(|e| SyncError::Protocol(Violation::BadLocationPiece(e)))?;
                each(&mut records, names)?;
            }
            Frame::Message(bytes) => return Err(unexpected("locations", &decode_message(&bytes)?)),
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a piece of a location log",
                    got: None,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WireClaim;

    /// A server's answers as bytes, one per request in turn: a hostile or
    /// an older server, which no real one here can be made to play.
    struct Answers(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

    impl Wire for Answers {
        fn exchange<'s>(
            &'s mut self,
            _verb: Verb,
            _request: &Request,
            _body: Option<BodyWriter<'_>>,
        ) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
            let answer = self.0.lock().unwrap().remove(0);
            Ok(FrameReader::new(Box::new(std::io::Cursor::new(answer))))
        }
    }

    fn client(answers: Vec<Vec<u8>>) -> Client {
        client_of(std::sync::Arc::new(std::sync::Mutex::new(answers)))
    }

    fn client_of(answers: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>) -> Client {
        Client {
            wire: Box::new(Answers(answers)),
            url: "test".into(),
            chunking: ChunkParams::default(),
            bare: true,
            partial: false,
        }
    }

    fn claim(tree: u8, replica: u8) -> WireClaim {
        WireClaim {
            tree: ObjectId([tree; 32]),
            replica: [replica; 16],
            time_ns: 1,
        }
    }

    /// A message, then an empty piece of a log and the end.
    fn answer(response: &Response) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = FrameWriter::new(&mut out);
        w.message(response).unwrap();
        if let Response::LocationClaims { .. } = response {
            w.locations(&LocationLog::default().encode()).unwrap();
            w.end().unwrap();
        }
        out
    }

    fn take(client: &mut Client, trees: &[ObjectId]) -> SyncResult<Vec<TreeClaim>> {
        client.get_locations_claiming(trees, &mut |_, _| Ok(()))
    }

    #[test]
    fn claims_a_client_did_not_ask_for_are_refused() {
        let asked = [ObjectId([1; 32])];
        let claims = |claims| answer(&Response::LocationClaims { claims });
        let got = take(
            &mut client(vec![claims(vec![claim(1, 1), claim(1, 2)])]),
            &asked,
        );
        assert_eq!(got.unwrap().len(), 2);
        for (bad, why) in [
            (vec![claim(2, 1)], "a claim of a tree not asked for"),
            (vec![claim(1, 2), claim(1, 1)], "tree claims out of order"),
            (vec![claim(1, 1), claim(1, 1)], "tree claims out of order"),
        ] {
            let err = take(&mut client(vec![claims(bad)]), &asked).unwrap_err();
            assert!(err.to_string().contains(why), "{err}");
        }
    }

    /// Claims put and refused (a server in front of a bucket, claims of a
    /// tree the server does not read, an older server) are not an error:
    /// the caller sends the records instead.
    #[test]
    fn claims_put_and_refused_leave_the_records_to_send() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dmv_repo::Repository::init(dir.path(), ChunkParams::default()).unwrap();
        let me = repo.copies().replica_id().unwrap();
        let refused = answer(&Response::Error {
            message: "protocol error: the claims of a location log: a bucket's logs take no claims"
                .into(),
        });
        let merged = answer(&Response::LocationsMerged);
        let mut c = client(vec![refused, merged]);
        let pages = || repo.copies().location_pages().unwrap();
        assert!(!c.put_location_claims(me, pages()).unwrap());
        assert!(c.put_location_claims(me, pages()).unwrap());
    }

    /// A server that cannot read the request says so, and the whole log
    /// is asked for as before.
    #[test]
    fn a_server_without_claims_is_asked_for_the_whole_log() {
        let unknown = answer(&Response::Error {
            message: "unknown request".into(),
        });
        let mut whole = Vec::new();
        let mut w = FrameWriter::new(&mut whole);
        w.locations(&LocationLog::default().encode()).unwrap();
        w.end().unwrap();
        let answers = std::sync::Arc::new(std::sync::Mutex::new(vec![unknown, whole]));
        let mut c = client_of(answers.clone());
        assert_eq!(take(&mut c, &[ObjectId([1; 32])]).unwrap(), Vec::new());
        assert!(
            answers.lock().unwrap().is_empty(),
            "the whole log was not asked for"
        );
    }
}
