//! Webhooks: each event the serving code records (dmv-sync's audit: a
//! push, a lock, an unlock, a broken lock, an upload, a drop) is POSTed as
//! JSON to every `[[webhooks]]` entry that asks for its kind, signed as
//! GitHub signs (`X-DMV-Signature-256: sha256=HEX`, the HMAC-SHA256 of the
//! body keyed with the entry's secret). Deliveries run on threads of their
//! own, so a push never waits for one; a delivery that gets no 2xx answer
//! is tried again after 1, 4, 16 and 64 seconds (five tries). The last
//! [`DELIVERIES_KEPT`] deliveries are remembered for the admin's audit
//! page; secrets are never logged or shown.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dmv_repo::AuditEvent;
use dmv_sync::{EventSink, Events};
use hmac::{KeyInit, Mac};

use crate::server_config::WebhookConfig;

/// Deliveries remembered for the audit page (the oldest forgotten first).
pub(crate) const DELIVERIES_KEPT: usize = 200;
/// Tries of one delivery, and the waits between them.
const BACKOFF: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(4),
    Duration::from_secs(16),
    Duration::from_secs(64),
];
/// How long one try may take.
const TRY_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries under way at once; past it an event is not sent (and the log says so).
const DELIVERIES_AT_ONCE: usize = 64;

/// One delivery as the audit page shows it.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    id: u64,
    pub event: String,
    pub url: String,
    pub status: String,
    pub tries: u32,
    pub time: i64,
}

/// The server's webhooks and what became of their deliveries.
#[derive(Clone, Default)]
pub(crate) struct Webhooks {
    hooks: Arc<Vec<WebhookConfig>>,
    log: Arc<Mutex<VecDeque<Delivery>>>,
    under_way: Arc<AtomicUsize>,
}

/// The sink of one repository's events.
struct RepoSink {
    hooks: Webhooks,
    repo: String,
}

impl EventSink for RepoSink {
    fn happened(&self, event: &AuditEvent) {
        self.hooks.send(&self.repo, event);
    }

    fn failed(&self, why: &str) {
        eprintln!("dmv serve: {why}");
    }
}

/// The signature header's value of `body` under `secret`.
pub(crate) fn signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        // HMAC takes keys of any length.
        Err(_) => return String::new(),
    };
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The JSON a webhook receives: the audit log's event and the repository's name.
pub(crate) fn body_of(repo: &str, event: &AuditEvent) -> Vec<u8> {
    let mut value = serde_json::to_value(event).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("repository".into(), repo.into());
    }
    serde_json::to_vec(&value).unwrap_or_default()
}

impl Webhooks {
    pub fn new(hooks: Vec<WebhookConfig>) -> Webhooks {
        Webhooks {
            hooks: Arc::new(hooks),
            ..Webhooks::default()
        }
    }

    /// Where the events of repository `repo` go: its audit log always, and these webhooks.
    pub fn events_for(&self, repo: &str) -> Events {
        Events::to(Arc::new(RepoSink {
            hooks: self.clone(),
            repo: repo.to_string(),
        }))
    }

    /// The deliveries remembered, oldest first.
    pub fn deliveries(&self) -> Vec<Delivery> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().cloned().collect()
    }

    fn note(&self, delivery: Delivery) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        match log.iter_mut().find(|d| d.id == delivery.id) {
            Some(kept) => *kept = delivery,
            None => {
                if log.len() == DELIVERIES_KEPT {
                    log.pop_front();
                }
                log.push_back(delivery);
            }
        }
    }

    fn send(&self, repo: &str, event: &AuditEvent) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let hooks = self.hooks.iter().filter(|h| h.wants(&event.event));
        for hook in hooks {
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            let mut delivery = Delivery {
                id,
                event: event.event.clone(),
                url: hook.url.clone(),
                status: "pending".into(),
                tries: 0,
                time: event.time,
            };
            if self.under_way.fetch_add(1, Ordering::SeqCst) >= DELIVERIES_AT_ONCE {
                self.under_way.fetch_sub(1, Ordering::SeqCst);
                delivery.status = format!("not sent: {DELIVERIES_AT_ONCE} deliveries under way");
                self.note(delivery);
                continue;
            }
            self.note(delivery.clone());
            let body = body_of(repo, event);
            let headers = vec![
                ("content-type", "application/json".to_string()),
                ("x-dmv-event", event.event.clone()),
                ("x-dmv-delivery", id.to_string()),
                (
                    "x-dmv-signature-256",
                    signature(hook.secret.as_bytes(), &body),
                ),
            ];
            let hooks = self.clone();
            let started = std::thread::Builder::new()
                .name("dmv-webhook".into())
                .spawn({
                    let mut delivery = delivery.clone();
                    move || {
                        hooks.deliver(&mut delivery, &headers, body);
                        hooks.under_way.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            if let Err(e) = started {
                self.under_way.fetch_sub(1, Ordering::SeqCst);
                delivery.status = format!("not sent: {e}");
                self.note(delivery);
            }
        }
    }

    /// Tries until a 2xx answer or the last try, noting each outcome.
    fn deliver(&self, delivery: &mut Delivery, headers: &[(&str, String)], body: Vec<u8>) {
        for wait in BACKOFF.iter().map(Some).chain([None]) {
            delivery.tries += 1;
            let answer = dmv_sync::post_once(&delivery.url, headers, body.clone(), TRY_TIMEOUT);
            let done = matches!(answer, Ok(200..=299));
            delivery.status = match answer {
                Ok(status) => status.to_string(),
                Err(why) => why,
            };
            self.note(delivery.clone());
            match (done, wait) {
                (false, Some(wait)) => std::thread::sleep(*wait),
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_signed_as_github_signs() {
        // RFC 4231's test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_delivery_log_is_bounded() {
        let hooks = Webhooks::default();
        for id in 0..(DELIVERIES_KEPT as u64 + 50) {
            hooks.note(Delivery {
                id,
                event: "push".into(),
                url: "http://x".into(),
                status: "200".into(),
                tries: 1,
                time: 0,
            });
        }
        let kept = hooks.deliveries();
        assert_eq!(kept.len(), DELIVERIES_KEPT);
        assert_eq!(kept[0].id, 50);
    }
}
