//! The HTTP transport: each request is one `POST BASE/dmv/VERB` whose body
//! is the request's frames and whose response body is the answer's frames.

use std::io::{BufReader, BufWriter, Read, Write};
use std::time::Duration;

use crate::client::{BodyWriter, Wire};
use crate::frame::{FrameReader, FrameWriter};
use crate::protocol::{Request, Verb, VERSION};
use crate::trace::Counting;
use crate::{SyncError, SyncResult};

pub struct HttpWire {
    client: reqwest::blocking::Client,
    base: String,
    token: Option<String>,
}

/// The innermost cause of an error, which is the one that says what happened.
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

impl HttpWire {
    pub fn new(base: &str, token: Option<String>) -> SyncResult<HttpWire> {
        // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let client = reqwest::blocking::Client::builder()
            .timeout(None::<Duration>)
            .connect_timeout(Duration::from_secs(15))
            .user_agent(concat!("dmv/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SyncError::Invalid(format!("cannot set up HTTP: {}", root_cause(&e))))?;
        Ok(HttpWire { client, base: base.to_string(), token })
    }
}

impl Wire for HttpWire {
    fn exchange<'s>(&'s mut self, verb: Verb, request: &Request, body: Option<BodyWriter<'_>>) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
        let url = format!("{}/dmv/{}", self.base, verb.name());
        let mut req = self.client.post(&url).header("DMV-Protocol", VERSION.to_string()).header("Content-Type", "application/x-dmv-frames");
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let sent = match body {
            None => {
                let mut buf = Vec::new();
                FrameWriter::new(&mut buf).message(request).map_err(|e| SyncError::Protocol(e.to_string()))?;
                crate::trace::BYTES_SENT.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
                req.body(buf).send()
            }
            Some(body) => {
                // The body streams from a producer thread through a pipe, so a
                // 1 TB push never sits in memory.
                let (reader, writer) = std::io::pipe().map_err(|e| SyncError::Invalid(format!("cannot create a pipe: {e}")))?;
                let (sent, produced) = std::thread::scope(|s| {
                    let producer = s.spawn(move || -> SyncResult<()> {
                        let mut out = BufWriter::with_capacity(1 << 20, Counting(writer));
                        let mut w = FrameWriter::new(&mut out as &mut dyn Write);
                        w.message(request).map_err(|e| SyncError::Disconnected(e.to_string()))?;
                        body(&mut w)?;
                        w.flush().map_err(|e| SyncError::Disconnected(e.to_string()))
                    });
                    let sent = req.body(reqwest::blocking::Body::new(reader)).send();
                    (sent, producer.join())
                });
                match produced {
                    Ok(Ok(())) => {}
                    // A local failure (say a damaged object) matters more than what it did to the request.
                    Ok(Err(e @ (SyncError::Store(_) | SyncError::Repo(_) | SyncError::Invalid(_)))) => return Err(e),
                    Ok(Err(_)) => {}
                    Err(_) => return Err(SyncError::Invalid("the upload thread panicked".into())),
                }
                sent
            }
        };
        let response = sent.map_err(|e| {
            if e.is_connect() {
                SyncError::Unreachable { url: self.base.clone(), detail: root_cause(&e) }
            } else {
                SyncError::Disconnected(root_cause(&e))
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().unwrap_or_default();
            let text = text.trim().to_string();
            return Err(match status.as_u16() {
                401 => SyncError::Auth { url: self.base.clone(), detail: format!("{text} (set DMV_TOKEN or `dmv remote add --token`)") },
                403 => SyncError::Auth { url: self.base.clone(), detail: text },
                404 => SyncError::NotARepository { url: self.base.clone(), detail: text },
                _ => SyncError::Remote(format!("HTTP {status}: {text}")),
            });
        }
        Ok(FrameReader::new(Box::new(BufReader::with_capacity(1 << 20, Counting(response)))))
    }
}
