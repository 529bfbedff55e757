//! What every kind of request shares, below the files that answer them
//! (server.rs, sealed.rs): whether its token lets it do what it asks, and
//! its body read with each wait for the client bounded.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use dmv_sync::Caller;
use futures_util::StreamExt;

use crate::server_config::{ReadAccess, TokenAccess, TokenEntry};
use crate::server_state::{Peer, ServerState};

/// Checks the token a request carried (`presented`, however it carried it)
/// against what the request needs (it `writes`, or only reads); wrong
/// tokens count against the client's ration of guesses; a refusal is its status and
/// why, for the caller to say in its protocol's words.
pub(crate) fn authorize_token(
    state: &ServerState,
    peer: Peer,
    headers: &HeaderMap,
    presented: Option<&str>,
    writes: bool,
) -> Result<Caller, (StatusCode, String)> {
    let config = &state.config;
    let entry = match presented {
        Some(t) => {
            let client = state.client_ip(peer, headers);
            if let Err(wait) = state.guesses.check(client) {
                return Err((
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "too many wrong tokens from {client}: try again in {} s",
                        wait.as_secs().max(1)
                    ),
                ));
            }
            match config.token_access(t) {
                Some(a) => Some(a),
                None => {
                    state.guesses.failed(client);
                    return Err((
                        StatusCode::FORBIDDEN,
                        "the token is not valid for this server".into(),
                    ));
                }
            }
        }
        None => None,
    };
    let access = entry.as_ref().map(TokenEntry::access);
    let caller = Caller {
        may_write: access >= Some(TokenAccess::Write),
        user: entry
            .as_ref()
            .and_then(TokenEntry::user)
            .map(str::to_string),
        admin: access == Some(TokenAccess::Admin),
        write: entry
            .as_ref()
            .map_or_else(dmv_repo::WriteGrant::everything, |e| config.write_grant(e)),
        events: dmv_sync::Events::default(),
        pre_receive: None,
        bucket_protects: Default::default(),
    };
    if writes {
        return match access {
            Some(TokenAccess::Write | TokenAccess::Admin) => Ok(caller),
            Some(TokenAccess::Read) => Err((
                StatusCode::FORBIDDEN,
                "this token may read but not write (push, lock)".into(),
            )),
            None => Err((
                StatusCode::UNAUTHORIZED,
                "pushing needs a write token".into(),
            )),
        };
    }
    if config.read == ReadAccess::Token && access.is_none() {
        return Err((
            StatusCode::UNAUTHORIZED,
            "this server needs a token to read".into(),
        ));
    }
    Ok(caller)
}

/// A request's body as a stream whose every wait for the client's next
/// piece ends after `idle`. Each wait is timed from when the handler asks,
/// so time the handler spends storing what came does not count.
pub(crate) fn body_with_idle_timeout(
    body: Body,
    idle: Duration,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
    futures_util::stream::unfold(Some(body.into_data_stream()), move |state| async move {
        let mut stream = state?;
        match tokio::time::timeout(idle, stream.next()).await {
            Ok(Some(Ok(piece))) => Some((Ok(piece), Some(stream))),
            Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e)), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the client sent nothing more for {} s", idle.as_secs()),
                )),
                None,
            )),
        }
    })
}
