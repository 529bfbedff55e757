//! How pages say when and what, in the words a photographer reads: dates
//! relative to now with the exact time kept for a hover or a tap, short
//! ids, and small drawn icons (an emoji the system's fonts lack showed as
//! a broken glyph).

use maud::{html, Markup, PreEscaped};

/// Seconds since 1970, now.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `secs` as people say it beside `now`: "just now", "5 minutes ago",
/// "yesterday", "3 days ago", then the date.
pub(crate) fn ago(secs: i64, now: i64) -> String {
    let d = now - secs;
    let plural = |n: i64, unit: &str| format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" });
    match d {
        i64::MIN..=-60 => dmv_repo::utc_time(secs)[..10].to_string(),
        -59..=59 => "just now".into(),
        60..=3599 => plural(d / 60, "minute"),
        3600..=86_399 => plural(d / 3600, "hour"),
        86_400..=172_799 => "yesterday".into(),
        172_800..=2_591_999 => plural(d / 86_400, "day"),
        _ => {
            let (y, m, day, ..) = dmv_repo::civil(secs);
            let (ny, ..) = dmv_repo::civil(now);
            let month = MONTHS[usize::from(m - 1)];
            if y == ny {
                format!("{day} {month}")
            } else {
                format!("{day} {month} {y}")
            }
        }
    }
}

pub(crate) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A date on a page: relative, with the exact time as its title and
/// machine-readable `datetime`.
pub(crate) fn when(secs: i64) -> Markup {
    let exact = dmv_repo::utc_time(secs);
    let iso = format!("{}T{}Z", &exact[..10], &exact[11..19]);
    html! { time datetime=(iso) title=(exact) { (ago(secs, now())) } }
}

/// The icons pages draw (24×24 strokes in the text's colour).
#[derive(Clone, Copy)]
pub(crate) enum Icon {
    Folder,
    File,
    Picture,
    Film,
    Sound,
    Lock,
    Search,
    Theme,
    History,
    Comment,
}

pub(crate) fn icon(which: Icon) -> Markup {
    let path = match which {
        Icon::Folder => "M3 6.5A1.5 1.5 0 0 1 4.5 5H9l2 2h8.5A1.5 1.5 0 0 1 21 8.5v9a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 17.5z",
        Icon::File => "M6 3h8l4 4v14H6zM14 3v4h4",
        Icon::Picture => "M4 5h16v14H4zM4 16l5-5 4 4 3-3 4 4M15.5 9.5a1 1 0 1 0 0-.01",
        Icon::Film => "M4 5h16v14H4zM8 5v14M16 5v14M4 9h4M4 15h4M16 9h4M16 15h4",
        Icon::Sound => "M9 18V6l10-2v12M9 18a2 2 0 1 1-4 0 2 2 0 0 1 4 0zM19 16a2 2 0 1 1-4 0 2 2 0 0 1 4 0z",
        Icon::Lock => "M6 11h12v9H6zM8.5 11V8a3.5 3.5 0 0 1 7 0v3",
        Icon::Search => "M10.5 17a6.5 6.5 0 1 0 0-13 6.5 6.5 0 0 0 0 13zM15.5 15.5L20 20",
        Icon::Theme => "M12 3a9 9 0 1 0 0 18zM12 3a9 9 0 0 1 0 18",
        Icon::History => "M4 12a8 8 0 1 0 2.3-5.6M4 4v4h4M12 8v4l3 2",
        Icon::Comment => "M4 5h16v11H10l-5 4v-4H4z",
    };
    html! { (PreEscaped(format!(r#"<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><path d="{path}"/></svg>"#))) }
}

#[cfg(test)]
mod tests {
    use super::ago;

    #[test]
    fn dates_read_as_people_say_them() {
        let now = 1_764_806_400; // 2025-12-04 00:00:00 UTC
        assert_eq!(ago(now - 5, now), "just now");
        assert_eq!(ago(now - 60, now), "1 minute ago");
        assert_eq!(ago(now - 7_200, now), "2 hours ago");
        assert_eq!(ago(now - 90_000, now), "yesterday");
        assert_eq!(ago(now - 3 * 86_400, now), "3 days ago");
        assert_eq!(ago(now - 60 * 86_400, now), "5 Oct");
        assert_eq!(ago(now - 400 * 86_400, now), "30 Oct 2024");
        // A clock ahead of the server's: the date, not "in the future".
        assert_eq!(ago(now + 86_400, now), "2025-12-05");
    }
}
