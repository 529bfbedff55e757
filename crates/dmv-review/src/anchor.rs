//! Where on a version of a file a comment points: a rectangle or a point
//! of a picture in the picture's own pixels (so zooming does not move it),
//! a moment or a stretch of a film or a sound in milliseconds, lines of a
//! text, or the file as a whole.

use serde::{Deserialize, Serialize};

use crate::error::{ReviewError, ReviewResult};

/// A picture's coordinate or size, at most (a picture of a million pixels
/// a side is beyond any camera; a larger number is a mistake).
pub const MAX_PIXEL: u32 = 1_000_000;
/// A moment, at most: 100 days of film, in milliseconds.
pub const MAX_MILLIS: u64 = 100 * 24 * 3600 * 1000;
/// A line number, at most.
pub const MAX_LINE: u32 = 100_000_000;

/// Where a comment points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "lowercase", deny_unknown_fields)]
pub enum Anchor {
    /// The whole file.
    File,
    /// A rectangle of a picture, from its top-left corner, in its pixels; a
    /// point when `w` and `h` are 0.
    Region {
        /// Pixels from the left edge.
        x: u32,
        /// Pixels from the top edge.
        y: u32,
        /// Width in pixels (0: a point).
        w: u32,
        /// Height in pixels (0: a point).
        h: u32,
    },
    /// A moment (`from == to`) or a stretch of a film or a sound.
    Time {
        /// Milliseconds from the start.
        from: u64,
        /// Milliseconds from the start, not before `from`.
        to: u64,
    },
    /// Lines of a text, counted from 1, both ends included.
    Lines {
        /// The first line.
        first: u32,
        /// The last line, not before `first`.
        last: u32,
    },
}

impl Anchor {
    /// Refuses an anchor out of its bounds (see the constants).
    pub fn check(&self) -> ReviewResult<()> {
        let ok = match *self {
            Anchor::File => true,
            Anchor::Region { x, y, w, h } => [x, y, w, h].iter().all(|v| *v <= MAX_PIXEL),
            Anchor::Time { from, to } => from <= to && to <= MAX_MILLIS,
            Anchor::Lines { first, last } => first >= 1 && first <= last && last <= MAX_LINE,
        };
        if ok {
            Ok(())
        } else {
            Err(ReviewError::Invalid(format!(
                "{} is out of bounds",
                self.describe()
            )))
        }
    }

    /// A region as typed: `X,Y` (a point) or `X,Y,W,H`, in pixels.
    pub fn parse_region(text: &str) -> ReviewResult<Anchor> {
        let bad = || ReviewError::Invalid(format!("{text:?} is not X,Y or X,Y,W,H in pixels"));
        let numbers: Vec<u32> = text
            .split(',')
            .map(|n| n.trim().parse::<u32>().map_err(|_| bad()))
            .collect::<ReviewResult<_>>()?;
        let anchor = match numbers[..] {
            [x, y] => Anchor::Region { x, y, w: 0, h: 0 },
            [x, y, w, h] => Anchor::Region { x, y, w, h },
            _ => return Err(bad()),
        };
        anchor.check()?;
        Ok(anchor)
    }

    /// A time as typed: `T` or `T0-T1`, each seconds (`62.5`) or
    /// `[H:]M:S[.fff]` (`1:02:13`).
    pub fn parse_time(text: &str) -> ReviewResult<Anchor> {
        let (from, to) = match text.split_once('-') {
            Some((a, b)) => (parse_moment(a)?, parse_moment(b)?),
            None => {
                let t = parse_moment(text)?;
                (t, t)
            }
        };
        let anchor = Anchor::Time { from, to };
        anchor.check()?;
        Ok(anchor)
    }

    /// Lines as typed: `A` or `A-B`.
    pub fn parse_lines(text: &str) -> ReviewResult<Anchor> {
        let bad = || ReviewError::Invalid(format!("{text:?} is not a line or A-B"));
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
        let (first, last) = match text.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(text)?, number(text)?),
        };
        let anchor = Anchor::Lines { first, last };
        anchor.check()?;
        Ok(anchor)
    }

    /// The anchor in words, as the command line prints it: `at 10,20 (40×30 px)`.
    pub fn describe(&self) -> String {
        match *self {
            Anchor::File => "on the file".to_string(),
            Anchor::Region { x, y, w: 0, h: 0 } => format!("at {x},{y}"),
            Anchor::Region { x, y, w, h } => format!("at {x},{y} ({w}×{h} px)"),
            Anchor::Time { from, to } if from == to => format!("at {}", moment(from)),
            Anchor::Time { from, to } => format!("at {}–{}", moment(from), moment(to)),
            Anchor::Lines { first, last } if first == last => format!("line {first}"),
            Anchor::Lines { first, last } => format!("lines {first}–{last}"),
        }
    }
}

/// Milliseconds as a film's timecode: `1:02:13.250`, `2:05`, `0:07.5`.
fn moment(ms: u64) -> String {
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let fraction = if frac == 0 {
        String::new()
    } else {
        format!(".{frac:03}").trim_end_matches('0').to_string()
    };
    if h > 0 {
        format!("{h}:{m:02}:{s:02}{fraction}")
    } else {
        format!("{m}:{s:02}{fraction}")
    }
}

/// Seconds (`62.5`) or `[H:]M:S[.fff]`, to milliseconds.
fn parse_moment(text: &str) -> ReviewResult<u64> {
    let bad = || ReviewError::Invalid(format!("{text:?} is not a time (seconds, or H:M:S)"));
    let text = text.trim();
    let (whole, frac) = match text.split_once('.') {
        Some((w, f)) if !f.is_empty() && f.len() <= 3 && f.bytes().all(|b| b.is_ascii_digit()) => {
            (w, format!("{f:0<3}").parse::<u64>().map_err(|_| bad())?)
        }
        Some(_) => return Err(bad()),
        None => (text, 0),
    };
    let parts: Vec<&str> = whole.split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty() || p.len() > 12) {
        return Err(bad());
    }
    let mut seconds: u64 = 0;
    for (i, part) in parts.iter().enumerate() {
        let n: u64 = part.parse().map_err(|_| bad())?;
        // Minutes and seconds after the first field stay below 60.
        if i > 0 && n >= 60 {
            return Err(bad());
        }
        seconds = seconds
            .checked_mul(60)
            .and_then(|s| s.checked_add(n))
            .ok_or_else(bad)?;
    }
    seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(frac))
        .filter(|ms| *ms <= MAX_MILLIS)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_parse_as_typed_and_read_back() {
        assert_eq!(
            Anchor::parse_region("10,20,40,30").unwrap(),
            Anchor::Region {
                x: 10,
                y: 20,
                w: 40,
                h: 30
            }
        );
        assert_eq!(Anchor::parse_region("5, 6").unwrap().describe(), "at 5,6");
        let t = Anchor::parse_time("1:02:13-1:02:15.5").unwrap();
        assert_eq!(
            t,
            Anchor::Time {
                from: 3_733_000,
                to: 3_735_500
            }
        );
        assert_eq!(t.describe(), "at 1:02:13–1:02:15.5");
        assert_eq!(
            Anchor::parse_time("62.25").unwrap().describe(),
            "at 1:02.25"
        );
        assert_eq!(Anchor::parse_lines("3-7").unwrap().describe(), "lines 3–7");
        for bad in ["", "1", "1,2,3", "-1,2", "1,2,3,4,5", "2000000,1"] {
            assert!(Anchor::parse_region(bad).is_err(), "{bad}");
        }
        for bad in [
            "",
            "x",
            "1:60",
            "5-3",
            "1.5555",
            "99999999999999999999",
            "1:2:3:4",
            "2401:00:00",
        ] {
            assert!(Anchor::parse_time(bad).is_err(), "{bad}");
        }
        for bad in ["0", "5-3", "a", "1-"] {
            assert!(Anchor::parse_lines(bad).is_err(), "{bad}");
        }
    }
}
