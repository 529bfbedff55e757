//! How a size is shown to a person: one formatter for the command line and
//! the web UI, in binary units as `ls -h` and git's progress show them.

/// "512 B", "2.0 KiB", "293.0 KiB", "2.9 MiB", "1.5 GiB", "3.0 TiB".
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1 << 10 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes_read_as_people_write_them() {
        let shown: Vec<String> = [
            0,
            1023,
            1024,
            300_000,
            3_000_000,
            3 << 30,
            5 << 40,
            u64::MAX,
        ]
        .into_iter()
        .map(human_bytes)
        .collect();
        assert_eq!(
            shown,
            [
                "0 B",
                "1023 B",
                "1.0 KiB",
                "293.0 KiB",
                "2.9 MiB",
                "3.0 GiB",
                "5.0 TiB",
                "16777216.0 TiB"
            ]
        );
    }
}
