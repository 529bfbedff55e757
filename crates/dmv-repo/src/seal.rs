//! A check line for the small text files dmv writes and no person edits
//! (`replica-id`, `replicas`): the last line holds a hash of the lines above
//! it, so `fsck` finds a flipped bit that would still read as another valid
//! id or name. Files written before the check line existed have none and are
//! read as they are.

const PREFIX: &str = "check ";

/// `body` (whole lines) with its check line after it.
pub fn seal(body: &str) -> String {
    format!("{body}{PREFIX}{}\n", digest(body.as_bytes()))
}

/// The lines above the check line (all of `text` when it has none): what
/// commands read, without judging it.
pub fn body(text: &str) -> &str {
    match split(text) {
        Some((body, _)) => body,
        None => text,
    }
}

/// Whether `text` ends in a check line (None: it has none, as files written
/// before check lines existed), and whether that matches the lines above it.
/// Commands refuse a mismatch; `fsck` also reports a missing line, since a
/// flipped newline can merge the check line into the one above.
pub fn checked(text: &str) -> Option<bool> {
    split(text).map(|(body, check)| check == digest(body.as_bytes()))
}

/// A hash of `bytes` as 32 hex digits (128 bits: a flip passes by chance once in 2^128).
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(&blake3::hash(bytes).as_bytes()[..16])
}

fn split(text: &str) -> Option<(&str, &str)> {
    let start = text.strip_suffix('\n')?.rfind('\n').map_or(0, |i| i + 1);
    let check = text[start..].strip_prefix(PREFIX)?.strip_suffix('\n')?;
    Some((&text[..start], check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_line_is_pinned_and_every_flip_of_a_sealed_text_is_seen() {
        let sealed = seal("0123-ab\n");
        assert_eq!(sealed, format!("0123-ab\ncheck {}\n", digest(b"0123-ab\n")));
        assert_eq!(digest(b""), "af1349b9f5f9a1a6a0404dea36dcc949");
        assert_eq!(body(&sealed), "0123-ab\n");
        assert_eq!(
            (checked(&sealed), checked("no check line\n")),
            (Some(true), None)
        );
        for i in 0..sealed.len() * 8 {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i / 8] ^= 1 << (i % 8);
            let Ok(flipped) = String::from_utf8(bytes) else {
                continue;
            };
            assert_ne!(checked(&flipped), Some(true), "{flipped:?}");
        }
    }
}
