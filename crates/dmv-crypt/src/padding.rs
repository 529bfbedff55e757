//! Padmé padding (Nikitin et al., "Reducing Metadata Leakage from Encrypted
//! Files and Communication with PURBs", PoPETs 2019, section 4): a sealed
//! object's length says little about the file inside it. A length `L` is
//! rounded up so that only its top `floor(log2(floor(log2 L))) + 1` bits
//! may be set below the leading one; that leaks O(log log L) bits of the
//! length, and costs at most 1/9 (11.1%) more bytes, less as files grow.

/// The length `n` pads to under Padmé.
///
/// `n` below 2 is its own padding (the paper's logarithms need `n >= 2`).
/// A result that would not fit in a `u64` saturates to `u64::MAX`; sealing
/// refuses lengths anywhere near that.
pub fn padded_len(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    // E = floor(log2 L), S = floor(log2 E) + 1 (E >= 1 here, so S <= E).
    let e = 63 - n.leading_zeros();
    let s = 32 - e.leading_zeros();
    let mask = (1u64 << (e - s)) - 1;
    n.checked_add(mask).map_or(u64::MAX, |m| m & !mask)
}

#[cfg(test)]
mod tests {
    use super::padded_len;

    /// The paper's definition, written as it is printed (with floating
    /// point logarithms), for lengths where f64 is exact.
    fn padme_as_printed(l: u64) -> u64 {
        let e = (l as f64).log2().floor();
        let s = e.log2().floor() + 1.0;
        let last_bits = (e - s) as u32;
        let bit_mask = (1u64 << last_bits) - 1;
        (l + bit_mask) & !bit_mask
    }

    #[test]
    fn matches_the_papers_definition() {
        for l in 2..(1u64 << 20) {
            assert_eq!(padded_len(l), padme_as_printed(l), "L = {l}");
        }
        let mut l = 1u64 << 20;
        while l < 1 << 50 {
            for d in [0, 1, 2, 3, 7, 1000, 65_535] {
                assert_eq!(padded_len(l + d), padme_as_printed(l + d), "L = {}", l + d);
            }
            l = l * 3 / 2 + 12_345;
        }
    }

    #[test]
    fn worked_examples() {
        // L = 9: E = 3, S = 2, one low bit cleared: 10, the worst overhead (1/9).
        // L = 100: E = 6, S = 3, 3 bits: 104. L = 1,000: E = 9, S = 4, 5 bits: 1,024.
        // L = 65,544 (64 KiB of data and the length): E = 16, S = 5, 11 bits: 67,584.
        for (l, padded) in [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 3),
            (8, 8),
            (9, 10),
            (13, 14),
            (100, 104),
            (1_000, 1_024),
            (1_025, 1_088),
            (65_544, 67_584),
            (1 << 30, 1 << 30),
            ((1 << 30) + 1, (1 << 30) + (1 << 25)),
        ] {
            assert_eq!(padded_len(l), padded, "L = {l}");
        }
        assert_eq!(padded_len(u64::MAX), u64::MAX);
        assert_eq!(padded_len(u64::MAX - (1 << 50)), u64::MAX);
    }

    #[test]
    fn overhead_and_leak_are_bounded() {
        let mut l = 2u64;
        while l < 1 << 62 {
            let p = padded_len(l);
            assert!(p >= l);
            // At most 1/9 more: 9 * (p - l) <= l.
            assert!(9 * (p - l) <= l, "L = {l} pads to {p}");
            // Padding twice changes nothing: a padded length is a fixed point.
            assert_eq!(padded_len(p), p);
            // Only the S bits below the leading one may be set (E and S of
            // the padded length): that is all the length tells.
            let e = 63 - p.leading_zeros();
            let s = 32 - e.leading_zeros();
            assert!(p.trailing_zeros() >= e - s, "L = {l} pads to {p}");
            l = l + l / 7 + 1;
        }
    }
}
