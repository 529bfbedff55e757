//! HTTP Range requests (RFC 9110 §14): one byte range of a file, so a
//! player seeking into a long film gets only what it plays.

/// The bytes to send of a file of `total` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// No usable range asked for: all of it (200).
    Whole,
    /// `start..start+len` (206, with Content-Range).
    Part {
        /// Offset of the first byte to send.
        start: u64,
        /// Bytes to send, at least one.
        len: u64,
    },
    /// Starts past the end (416).
    Unsatisfiable,
}

/// Reads a `Range` header against a file of `total` bytes. Only single
/// `bytes=` ranges are served as parts; anything else (several ranges,
/// other units, nonsense) gets the whole file, which RFC 9110 allows.
pub fn parse_range(header: Option<&str>, total: u64) -> ByteRange {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return ByteRange::Whole;
    };
    if spec.contains(',') {
        return ByteRange::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return ByteRange::Whole;
    };
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            s.parse::<u64>().ok()
        }
    };
    match (first.trim(), last.trim()) {
        ("", suffix) => match number(suffix) {
            Some(0) => ByteRange::Unsatisfiable,
            Some(_) if total == 0 => ByteRange::Unsatisfiable,
            Some(n) => {
                let len = n.min(total);
                ByteRange::Part {
                    start: total - len,
                    len,
                }
            }
            None => ByteRange::Whole,
        },
        (first, last) => {
            let Some(start) = number(first) else {
                return ByteRange::Whole;
            };
            if start >= total {
                return ByteRange::Unsatisfiable;
            }
            let end = match last {
                "" => total - 1,
                l => match number(l) {
                    Some(e) if e >= start => e.min(total - 1),
                    _ => return ByteRange::Whole,
                },
            };
            ByteRange::Part {
                start,
                len: end - start + 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_rfc_9110_says() {
        let p = |h: &str| parse_range(Some(h), 1000);
        assert_eq!(
            p("bytes=0-"),
            ByteRange::Part {
                start: 0,
                len: 1000
            }
        );
        assert_eq!(
            p("bytes=100-199"),
            ByteRange::Part {
                start: 100,
                len: 100
            }
        );
        assert_eq!(
            p("bytes=900-5000"),
            ByteRange::Part {
                start: 900,
                len: 100
            }
        );
        assert_eq!(
            p("bytes=-10"),
            ByteRange::Part {
                start: 990,
                len: 10
            }
        );
        assert_eq!(
            p("bytes=-5000"),
            ByteRange::Part {
                start: 0,
                len: 1000
            }
        );
        assert_eq!(p("bytes=1000-"), ByteRange::Unsatisfiable);
        assert_eq!(p("bytes=-0"), ByteRange::Unsatisfiable);
        for whole in [
            "bytes=0-1,5-6",
            "items=0-1",
            "bytes=a-b",
            "bytes=5-3",
            "bytes=-",
            "bytes=+1-2",
        ] {
            assert_eq!(p(whole), ByteRange::Whole, "{whole}");
        }
        assert_eq!(parse_range(None, 10), ByteRange::Whole);
        assert_eq!(parse_range(Some("bytes=0-"), 0), ByteRange::Unsatisfiable);
    }
}
