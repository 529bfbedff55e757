//! Repository names and paths as parts of the UI's URLs.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

/// What a path segment must escape (RFC 3986 path characters stay).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'+');

/// One URL segment.
pub fn seg(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// A repository path as URL segments.
pub(crate) fn path_url(path: &str) -> String {
    path.split('/').map(seg).collect::<Vec<_>>().join("/")
}
