//! `/NAME/audit`: the audit log of a served repository (who pushed,
//! locked, unlocked, broke a lock, uploaded and dropped what and when),
//! and the server's last webhook deliveries: for admins only. The server
//! reads both (a directory's log, a bucket's, its own deliveries) and
//! this page shows them, every text escaped as on every page.

use dmv_repo::AuditRead;
use maud::html;

use crate::pages::{error_page, html, layout};
use crate::reply::{Reply, Viewer};
use crate::words::when;

/// One webhook delivery, as the server remembers it.
pub struct DeliveryRow {
    /// The event's kind (`push`, `lock`, …).
    pub event: String,
    /// Where it was sent.
    pub url: String,
    /// The last answer's status, or why there was none.
    pub status: String,
    /// Tries made so far.
    pub tries: u32,
    /// When the event happened (seconds since 1970).
    pub time: i64,
}

/// The page, or 403 for a viewer who is not an admin. `read` is the log
/// as read, or why it could not be.
pub fn audit_page(
    name: &str,
    viewer: &Viewer,
    read: Result<&AuditRead, &str>,
    deliveries: &[DeliveryRow],
) -> Reply {
    if !viewer.admin {
        return error_page(403, Some(name), "the audit log is for admin tokens only");
    }
    let body = html! {
        h1 { "Audit log" }
        @match read {
            Err(why) => { p { "The audit log could not be read: " (why) } }
            Ok(read) => {
                @if read.events.is_empty() { p.muted { "Nothing has been recorded yet." } }
                @if read.cut_short { p.muted { "Only the newest events are shown." } }
                @if read.unreadable > 0 { p.muted { (read.unreadable) " damaged lines were passed over." } }
                table { @for e in read.events.iter().rev() {
                    tr {
                        td.muted { (when(e.time)) } td { (e.event) } td { (e.user) }
                        td {
                            @for r in &e.refs {
                                div { (r.name) " "
                                    span.muted { (short(&r.old)) " → " (short(&r.new)) } }
                            }
                            @for p in &e.paths { div { (p) } }
                            @if e.more_refs > 0 { div.muted { "and " (e.more_refs) " more refs" } }
                            @if e.more_paths > 0 { div.muted { "and " (e.more_paths) " more paths" } }
                            @if let Some(d) = &e.detail { div.muted { (d) } }
                        }
                    }
                } }
            }
        }
        @if !deliveries.is_empty() {
            h2 { "Webhook deliveries" }
            table { @for d in deliveries.iter().rev() {
                tr {
                    td.muted { (when(d.time)) } td { (d.event) } td { (d.url) }
                    td { (d.status) } td.muted { (d.tries) " tries" }
                }
            } }
        }
    };
    html(layout("Audit log", Some(name), body))
}

fn short(id: &Option<String>) -> String {
    id.as_deref()
        .map_or_else(|| "(none)".to_string(), |h| h.chars().take(12).collect())
}
