//! The client's view of a remote: typed calls over any [`Wire`].

use std::io::{Read, Write};

use dmv_repo::store::{ChunkParams, ObjectId, StoredObject};

use crate::frame::{decode_message, Frame, FrameReader, FrameWriter};
use crate::protocol::{Request, Response, Verb, WireRefUpdate, MAX_IDS_PER_REQUEST, VERSION};
use crate::{SyncError, SyncResult};

/// Writes a request's body (object frames) after the request itself.
pub type BodyWriter<'a> = &'a mut (dyn FnMut(&mut FrameWriter<&mut dyn Write>) -> SyncResult<()> + Send);

/// A way to carry one request and its answer: a pipe to `dmv serve --stdio`
/// (local or through ssh) or an HTTP request.
pub trait Wire {
    fn exchange<'s>(&'s mut self, verb: Verb, request: &Request, body: Option<BodyWriter<'_>>) -> SyncResult<FrameReader<Box<dyn Read + 's>>>;
}

/// What arrives for a requested id.
pub enum Received {
    Object(StoredObject),
    ChunkStub { id: ObjectId, raw_len: u32 },
}

pub struct Client {
    wire: Box<dyn Wire>,
    pub url: String,
    pub chunking: ChunkParams,
    pub bare: bool,
}

fn unexpected(what: &str, got: &Response) -> SyncError {
    match got {
        Response::Error { message } => SyncError::Remote(message.clone()),
        other => SyncError::Protocol(format!("expected {what}, got {other:?}")),
    }
}

fn read_response<R: Read>(frames: &mut FrameReader<R>) -> SyncResult<Response> {
    match frames.expect_frame()? {
        Frame::Message(bytes) => decode_message(&bytes),
        _ => Err(SyncError::Protocol("expected a response message".into())),
    }
}

impl Client {
    /// Says hello and checks both sides speak the same protocol.
    pub fn connect(mut wire: Box<dyn Wire>, url: &str) -> SyncResult<Client> {
        let not_repo = |detail: String| SyncError::NotARepository { url: url.to_string(), detail };
        let response = {
            let mut frames = wire.exchange(Verb::Hello, &Request::Hello { version: VERSION }, None)?;
            read_response(&mut frames)?
        };
        match response {
            Response::Hello { version, chunking, bare } => {
                if version != VERSION {
                    return Err(SyncError::Version { remote: version, local: VERSION });
                }
                Ok(Client { wire, url: url.to_string(), chunking, bare })
            }
            Response::Error { message } if message.starts_with("not a dmv repository") => Err(not_repo(message)),
            other => Err(unexpected("hello", &other)),
        }
    }

    fn call(&mut self, request: Request) -> SyncResult<Response> {
        let mut frames = self.wire.exchange(request.verb(), &request, None)?;
        read_response(&mut frames)
    }

    /// Branches and tags of the remote, and the branch its HEAD names.
    pub fn list_refs(&mut self) -> SyncResult<(Option<String>, Vec<(String, ObjectId)>)> {
        match self.call(Request::ListRefs)? {
            Response::Refs { head, refs } => Ok((head, refs)),
            other => Err(unexpected("refs", &other)),
        }
    }

    pub fn walk_commits(&mut self, wants: Vec<ObjectId>, haves: Vec<ObjectId>) -> SyncResult<Vec<ObjectId>> {
        match self.call(Request::WalkCommits { wants, haves })? {
            Response::Commits { ids } => Ok(ids),
            other => Err(unexpected("commits", &other)),
        }
    }

    pub fn has(&mut self, ids: &[ObjectId]) -> SyncResult<Vec<bool>> {
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(MAX_IDS_PER_REQUEST) {
            match self.call(Request::Has { ids: batch.to_vec() })? {
                Response::Has { present } if present.len() == batch.len() => out.extend(present),
                other => return Err(unexpected("has", &other)),
            }
        }
        Ok(out)
    }

    /// Fetches objects (chunks as stubs unless `chunks`), handing each to `sink`.
    pub fn get(&mut self, ids: &[ObjectId], chunks: bool, sink: &mut dyn FnMut(Received) -> SyncResult<()>) -> SyncResult<()> {
        for batch in ids.chunks(MAX_IDS_PER_REQUEST) {
            let mut frames = self.wire.exchange(Verb::Get, &Request::Get { ids: batch.to_vec(), chunks }, None)?;
            let mut expected = batch.iter();
            loop {
                let got = match frames.expect_frame()? {
                    Frame::End => break,
                    Frame::Object(obj) => Received::Object(obj),
                    Frame::ChunkStub { id, raw_len } => Received::ChunkStub { id, raw_len },
                    Frame::Message(bytes) => return Err(unexpected("objects", &decode_message(&bytes)?)),
                };
                let id = match &got {
                    Received::Object(o) => o.id,
                    Received::ChunkStub { id, .. } => *id,
                };
                if expected.next() != Some(&id) {
                    return Err(SyncError::Protocol(format!("remote sent {id}, which was not asked for next")));
                }
                sink(got)?;
            }
            if expected.next().is_some() {
                return Err(SyncError::Protocol("remote sent fewer objects than asked for".into()));
            }
        }
        Ok(())
    }

    /// Uploads objects written by `body` (children before parents).
    pub fn put(&mut self, body: BodyWriter<'_>) -> SyncResult<(u64, u64)> {
        let mut frames = self.wire.exchange(Verb::Put, &Request::Put, Some(body))?;
        match read_response(&mut frames)? {
            Response::Stored { objects, bytes } => Ok((objects, bytes)),
            other => Err(unexpected("stored", &other)),
        }
    }

    pub fn update_refs(&mut self, updates: Vec<WireRefUpdate>, who: &str, message: &str) -> SyncResult<()> {
        match self.call(Request::UpdateRefs { updates, who: who.into(), message: message.into() })? {
            Response::RefsUpdated => Ok(()),
            Response::Rejected { name, found } => Err(SyncError::Rejected { name, found }),
            other => Err(unexpected("refs updated", &other)),
        }
    }
}
