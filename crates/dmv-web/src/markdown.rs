//! Markdown files shown as pages, safely: what a committed file may put in
//! the UI's origin is formatted text, links and images of this server, never
//! markup or script of its own.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag};

/// `text` as HTML: raw HTML in it is shown as text, and links or images
/// to anything but http(s), mailto or a relative address lose their target.
pub fn to_safe_html(text: &str) -> String {
    let events = Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH).map(
        |event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url: safe_url(dest_url),
                title,
                id,
            }),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Image {
                link_type,
                dest_url: safe_url(dest_url),
                title,
                id,
            }),
            other => other,
        },
    );
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// `url` when its scheme is harmless, else nothing.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim_start().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None | Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_a_committed_file_stays_text() {
        let page = to_safe_html("# Shoot\n\n<script>alert(1)</script>\n\nsee <img src=x onerror=alert(1)> [notes](notes.txt) [x](javascript:alert(1)) [y]( JAVASCRIPT:alert(1)) ![i](data:image/svg+xml,1)\n");
        assert!(page.contains("<h1>Shoot</h1>"), "{page}");
        assert!(
            !page.contains("<script")
                && !page.contains("<img src=\"x\"")
                && !page.to_ascii_lowercase().contains("javascript:")
                && !page.contains("data:"),
            "{page}"
        );
        assert!(
            page.contains("&lt;script&gt;") && page.contains("href=\"notes.txt\""),
            "{page}"
        );
    }
}
