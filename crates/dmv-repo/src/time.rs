//! Dates of commits and locks for people and for archive formats, in UTC.

/// Seconds since 1970 as (year, month, day, hour, minute, second) in UTC,
/// on the proleptic Gregorian calendar.
pub fn civil(secs: i64) -> (i64, u8, u8, u8, u8, u8) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (
        y,
        m as u8,
        d as u8,
        (rem / 3600) as u8,
        (rem % 3600 / 60) as u8,
        (rem % 60) as u8,
    )
}

/// A time in seconds since 1970 as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_time(secs: i64) -> String {
    let (y, m, d, h, mi, s) = civil(secs);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Days since 1970 of a date on the proleptic Gregorian calendar (the inverse of [`civil`]'s date).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A date as a person gives one to `log --since`/`--until` (in UTC):
/// `2026-11-28`, `2026-11-28 14:03[:00]` (or with `T`, a trailing `Z` or
/// ` UTC`), `@SECONDS`, `N UNITS ago` (seconds to years), `yesterday`,
/// `today`, `now`. None when it is none of these.
pub fn parse_date(text: &str, now: i64) -> Option<i64> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    match lower.as_str() {
        "now" => return Some(now),
        "today" => return Some(now - now.rem_euclid(86_400)),
        "yesterday" => return Some(now - now.rem_euclid(86_400) - 86_400),
        _ => {}
    }
    if let Some(secs) = text.strip_prefix('@') {
        return secs.parse().ok();
    }
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == '.')
        .filter(|w| !w.is_empty())
        .collect();
    if let [n, unit, "ago"] = words.as_slice() {
        let n: i64 = n.parse().ok()?;
        let unit = unit.strip_suffix('s').unwrap_or(unit);
        let secs = match unit {
            "second" | "sec" => 1,
            "minute" | "min" => 60,
            "hour" => 3600,
            "day" => 86_400,
            "week" => 7 * 86_400,
            "month" => 30 * 86_400,
            "year" => 365 * 86_400,
            _ => return None,
        };
        return now.checked_sub(n.checked_mul(secs)?);
    }
    let stamp = lower.trim_end_matches(" utc").trim_end_matches('z');
    let (date, time) = stamp
        .split_once(['t', ' '])
        .map_or((stamp, ""), |(d, t)| (d, t.trim()));
    let num = |s: &str, max: i64| {
        s.parse::<i64>()
            .ok()
            .filter(|v| (0..=max).contains(v) && !s.is_empty() && s.len() <= 4)
    };
    let [y, m, d] = date.split('-').collect::<Vec<_>>()[..] else {
        return None;
    };
    let (y, m, d) = (num(y, 9999)?, num(m, 12)?, num(d, 31)?);
    if m == 0 || d == 0 || y < 1000 {
        return None;
    }
    let (h, mi, sec) = match time.split(':').collect::<Vec<_>>()[..] {
        [""] => (0, 0, 0),
        [h, mi] => (num(h, 23)?, num(mi, 59)?, 0),
        [h, mi, sec] => (num(h, 23)?, num(mi, 59)?, num(sec, 60)?),
        _ => return None,
    };
    Some(days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_people_write_are_read() {
        let now = 1_764_079_380; // 2025-11-25 14:03:00 UTC
        assert_eq!(
            parse_date("2025-11-25", now),
            Some(now - 14 * 3600 - 3 * 60)
        );
        assert_eq!(parse_date("2025-11-25 14:03", now), Some(now));
        assert_eq!(parse_date("2025-11-25T14:03:00Z", now), Some(now));
        assert_eq!(parse_date("2025-11-25 14:03:00 UTC", now), Some(now));
        assert_eq!(parse_date("@1764079380", now), Some(now));
        assert_eq!(parse_date("2 weeks ago", now), Some(now - 14 * 86_400));
        assert_eq!(parse_date("3.days.ago", now), Some(now - 3 * 86_400));
        assert_eq!(parse_date("1 hour ago", now), Some(now - 3600));
        assert_eq!(
            parse_date("yesterday", now),
            Some(now - 14 * 3600 - 3 * 60 - 86_400)
        );
        for bad in [
            "",
            "soon",
            "2025-13-01",
            "2025-11-25 25:00",
            "11/25/2025",
            "x days ago",
            "99999999999999999999 years ago",
        ] {
            assert_eq!(parse_date(bad, now), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_shown_time_reads_back(secs in -30_000_000_000i64..250_000_000_000i64) {
            let (y, ..) = civil(secs);
            proptest::prop_assume!((1000..=9999).contains(&y));
            proptest::prop_assert_eq!(parse_date(&utc_time(secs), 0), Some(secs));
        }
    }

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(utc_time(1_764_079_380), "2025-11-25 14:03:00 UTC");
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(-1), "1969-12-31 23:59:59 UTC");
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
    }
}
