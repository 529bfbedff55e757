//! Golden vectors: hex written in labelled parts, and a comparison that
//! shows which part changed.

/// Joins hex parts into one string (whitespace ignored).
pub fn hex_of(parts: &[&str]) -> String {
    parts
        .concat()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

pub fn bytes_of(parts: &[&str]) -> Vec<u8> {
    let h = hex_of(parts);
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compares `actual` with the golden parts; on a mismatch, shows every part
/// next to the bytes actually found at its place.
pub fn assert_golden(what: &str, actual: &[u8], parts: &[&str]) {
    let expected = hex_of(parts);
    let got = to_hex(actual);
    if got == expected {
        return;
    }
    let mut report = String::new();
    let mut at = 0;
    for p in parts {
        let p = hex_of(&[p]);
        let here = got.get(at..(at + p.len()).min(got.len())).unwrap_or("");
        let mark = if here == p { "  " } else { "!!" };
        report.push_str(&format!("{mark} expected {p}\n   actual   {here}\n"));
        at += p.len();
    }
    if got.len() > at {
        report.push_str(&format!("!! trailing {}\n", &got[at..]));
    }
    panic!("{what}: encoding changed\n{report}full actual: {got}");
}
