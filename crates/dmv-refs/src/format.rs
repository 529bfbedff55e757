//! Record keys and values (see docs/refs-format.md). Everything that parses
//! bytes returns `Err(&'static str)` so the caller can name the table file.

use crate::value::{RefValue, ReflogEntry};

/// Key prefix of ref records. Chosen greater than `LOG_PREFIX` only by
/// accident of the alphabet; the code never relies on the relative order.
pub(crate) const REF_PREFIX: u8 = b'r';
pub(crate) const LOG_PREFIX: u8 = b'l';

/// Value types.
pub(crate) const T_REF: u8 = 1;
pub(crate) const T_DELETE: u8 = 2;
pub(crate) const T_LOG: u8 = 3;
pub(crate) const T_INDEX: u8 = 4;

pub(crate) fn ref_key(name: &str, out: &mut Vec<u8>) {
    out.clear();
    out.push(REF_PREFIX);
    out.extend_from_slice(name.as_bytes());
}

/// `l name 0x00 be64(!update_index)`: NUL cannot occur in a name, so all log
/// records of one ref are contiguous and sort before those of `name/...`; the
/// inverted index puts the newest entry first, as `reflog()` returns them.
pub(crate) fn log_key(name: &str, update_index: u64, out: &mut Vec<u8>) {
    out.clear();
    out.push(LOG_PREFIX);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.extend_from_slice(&(!update_index).to_be_bytes());
}

/// Prefix shared by all log keys of `name`.
pub(crate) fn log_name_prefix(name: &str, out: &mut Vec<u8>) {
    out.clear();
    out.push(LOG_PREFIX);
    out.extend_from_slice(name.as_bytes());
    out.push(0);
}

/// Splits a log key into (name, update_index).
pub(crate) fn parse_log_key(key: &[u8]) -> Result<(&str, u64), &'static str> {
    if key.len() < 1 + 1 + 8 || key[0] != LOG_PREFIX {
        return Err("malformed log key");
    }
    let name_end = key.len() - 9;
    if key[name_end] != 0 {
        return Err("malformed log key");
    }
    let name = std::str::from_utf8(&key[1..name_end]).map_err(|_| "log key is not UTF-8")?;
    let mut idx = [0u8; 8];
    idx.copy_from_slice(&key[name_end + 1..]);
    Ok((name, !u64::from_be_bytes(idx)))
}

pub(crate) fn parse_ref_key(key: &[u8]) -> Result<&str, &'static str> {
    if key.len() < 2 || key[0] != REF_PREFIX {
        return Err("malformed ref key");
    }
    std::str::from_utf8(&key[1..]).map_err(|_| "ref key is not UTF-8")
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// LEB128; refuses encodings longer than 10 bytes or overflowing u64.
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        let bits = (b & 0x7f) as u64;
        if i == 9 && bits > 1 {
            return Err("varint overflows 64 bits");
        }
        v |= bits << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long")
}

pub(crate) fn encode_log(
    out: &mut Vec<u8>,
    old: Option<&RefValue>,
    new: Option<&RefValue>,
    time: i64,
    tz: i16,
    who: &str,
    msg: &str,
) {
    out.clear();
    out.push(old.is_some() as u8 | ((new.is_some() as u8) << 1));
    if let Some(o) = old {
        out.extend_from_slice(o);
    }
    if let Some(n) = new {
        out.extend_from_slice(n);
    }
    out.extend_from_slice(&time.to_be_bytes());
    out.extend_from_slice(&tz.to_be_bytes());
    put_varint(out, who.len() as u64);
    out.extend_from_slice(who.as_bytes());
    put_varint(out, msg.len() as u64);
    out.extend_from_slice(msg.as_bytes());
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], &'static str> {
    let end = pos.checked_add(n).ok_or("length overflow")?;
    let s = buf.get(*pos..end).ok_or("truncated log record")?;
    *pos = end;
    Ok(s)
}

fn take_value(buf: &[u8], pos: &mut usize) -> Result<RefValue, &'static str> {
    let mut v = [0u8; 32];
    v.copy_from_slice(take(buf, pos, 32)?);
    Ok(v)
}

fn take_str(buf: &[u8], pos: &mut usize) -> Result<String, &'static str> {
    let n = get_varint(buf, pos)?;
    let n = usize::try_from(n).map_err(|_| "length overflow")?;
    let s = take(buf, pos, n)?;
    String::from_utf8(s.to_vec()).map_err(|_| "log text is not UTF-8")
}

pub(crate) fn decode_log(key: &[u8], value: &[u8]) -> Result<(ReflogEntry, u64), &'static str> {
    let (name, idx) = parse_log_key(key)?;
    let mut pos = 0;
    let flags = *take(value, &mut pos, 1)?
        .first()
        .ok_or("truncated log record")?;
    if flags & !3 != 0 {
        return Err("unknown log record flags");
    }
    let old = if flags & 1 != 0 {
        Some(take_value(value, &mut pos)?)
    } else {
        None
    };
    let new = if flags & 2 != 0 {
        Some(take_value(value, &mut pos)?)
    } else {
        None
    };
    let mut t = [0u8; 8];
    t.copy_from_slice(take(value, &mut pos, 8)?);
    let mut z = [0u8; 2];
    z.copy_from_slice(take(value, &mut pos, 2)?);
    let who = take_str(value, &mut pos)?;
    let message = take_str(value, &mut pos)?;
    if pos != value.len() {
        return Err("trailing bytes in log record");
    }
    Ok((
        ReflogEntry {
            name: name.to_string(),
            old,
            new,
            who,
            time: i64::from_be_bytes(t),
            tz_minutes: i16::from_be_bytes(z),
            message,
        },
        idx,
    ))
}

pub(crate) fn decode_ref(vtype: u8, value: &[u8]) -> Result<Option<RefValue>, &'static str> {
    match vtype {
        T_REF => {
            let v: RefValue = value.try_into().map_err(|_| "ref value is not 32 bytes")?;
            Ok(Some(v))
        }
        T_DELETE if value.is_empty() => Ok(None),
        T_DELETE => Err("deletion record carries a value"),
        _ => Err("unexpected value type for a ref record"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut p = 0;
            assert_eq!(get_varint(&b, &mut p).unwrap(), v);
            assert_eq!(p, b.len());
        }
        let mut p = 0;
        assert!(get_varint(&[0xff; 11], &mut p).is_err());
        let mut p = 0;
        assert!(get_varint(
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &mut p
        )
        .is_err());
    }

    #[test]
    fn log_round_trip() {
        let mut k = Vec::new();
        log_key("a/b", 42, &mut k);
        let mut v = Vec::new();
        encode_log(
            &mut v,
            None,
            Some(&[7; 32]),
            -5,
            -120,
            "Me <m@x>",
            "msg\nline",
        );
        let (e, idx) = decode_log(&k, &v).unwrap();
        assert_eq!(idx, 42);
        assert_eq!(e.name, "a/b");
        assert_eq!(e.old, None);
        assert_eq!(e.new, Some([7; 32]));
        assert_eq!((e.time, e.tz_minutes), (-5, -120));
        assert_eq!(e.who, "Me <m@x>");
        assert_eq!(e.message, "msg\nline");
        assert!(decode_log(&k, &v[..v.len() - 1]).is_err());
    }

    proptest::proptest! {
        /// Record parsers take any bytes: an error, never a panic, and a
        /// declared text length never sizes a buffer past the value's bytes.
        #[test]
        fn parsers_never_panic(key in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48), value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..160), vtype in 0u8..6) {
            let _ = parse_log_key(&key);
            let _ = parse_ref_key(&key);
            let _ = decode_ref(vtype, &value);
            let mut pos = 0;
            let _ = get_varint(&value, &mut pos);
            let mut log_key_bytes = Vec::new();
            log_key("r", 1, &mut log_key_bytes);
            let _ = decode_log(&key, &value);
            let _ = decode_log(&log_key_bytes, &value);
        }

        #[test]
        fn declared_text_lengths_are_checked(declared in proptest::prelude::any::<u64>(), have in 0usize..64) {
            let mut k = Vec::new();
            log_key("a", 3, &mut k);
            let mut v = vec![0u8];
            v.extend_from_slice(&[0; 10]);
            put_varint(&mut v, declared);
            v.extend(std::iter::repeat_n(b'w', have));
            put_varint(&mut v, 0);
            let ok = decode_log(&k, &v).is_ok();
            proptest::prop_assert_eq!(ok, declared == have as u64);
        }
    }
}
