//! Serving a repository on this machine from a thread of this process: the
//! same requests and answers as `dmv serve --stdio`, over in-process pipes,
//! for front ends that are not the `dmv` binary and cannot start it.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;

use dmv_repo::{RepoError, Repository};

use crate::protocol::frame::{FrameReader, FrameWriter};
use crate::protocol::{Request, Verb};
use crate::transport::client::{BodyWriter, Wire};
use crate::TransportError;
use crate::{SyncError, SyncResult};

const PIPE_BUFFER: usize = 1 << 20;

pub struct InProcessWire {
    repo: Arc<Repository>,
}

impl InProcessWire {
    pub fn open(path: &Path, url: &str) -> SyncResult<InProcessWire> {
        match Repository::open(path) {
            Ok(repo) => Ok(InProcessWire {
                repo: Arc::new(repo),
            }),
            Err(RepoError::NotARepository(_) | RepoError::Io { .. }) => {
                Err(SyncError::Transport(TransportError::NotARepository {
                    url: url.to_string(),
                    detail: "not a dmv repository".into(),
                }))
            }
            Err(other) => Err(SyncError::Transport(TransportError::NotARepository {
                url: url.to_string(),
                detail: format!("not a dmv repository: {other}"),
            })),
        }
    }
}

fn lost(e: std::io::Error) -> SyncError {
    SyncError::Transport(TransportError::Disconnected(e.to_string()))
}

impl Wire for InProcessWire {
    fn exchange<'s>(
        &'s mut self,
        _verb: Verb,
        request: &Request,
        body: Option<BodyWriter<'_>>,
    ) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
        let (request_in, request_out) = std::io::pipe().map_err(lost)?;
        let (response_in, response_out) = std::io::pipe().map_err(lost)?;
        let repo = self.repo.clone();
        let caller = crate::serving::serve::Caller::local_account(&repo.root);
        let request = request.clone();
        // The server side ends with its answer; if it fails, the client sees the answer cut short.
        std::thread::spawn(move || {
            let mut input = FrameReader::new(BufReader::with_capacity(PIPE_BUFFER, request_in));
            let mut out = FrameWriter::new(BufWriter::with_capacity(PIPE_BUFFER, response_out));
            if crate::serving::serve::handle_request(&repo, &caller, request, &mut input, &mut out)
                .is_ok()
            {
                let _ = out.flush();
            }
        });
        if let Some(body) = body {
            let mut buffered = BufWriter::with_capacity(PIPE_BUFFER, request_out);
            let mut frames = FrameWriter::new(&mut buffered as &mut dyn Write);
            body(&mut frames)?;
            frames.flush().map_err(lost)?;
        }
        Ok(FrameReader::new(Box::new(BufReader::with_capacity(
            PIPE_BUFFER,
            response_in,
        ))))
    }
}
