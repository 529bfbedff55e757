//! A `.mailmap` read as git reads it: each line maps the names and
//! emails commits were made with to the ones a person goes by, in git's
//! four forms
//!
//! ```text
//! Proper Name <commit@email>
//! <proper@email> <commit@email>
//! Proper Name <proper@email> <commit@email>
//! Proper Name <proper@email> Commit Name <commit@email>
//! ```
//!
//! Emails and names are compared without regard to ASCII case; a line
//! starting with `#` and text after the last `>` are left out; a later
//! line wins over an earlier one for the same commit name and email. The
//! file is someone else's content: it is read up to [`MAX_MAILMAP_BYTES`]
//! and [`MAX_MAILMAP_LINES`], and one past either is not read at all (the
//! map says why, for a front end to warn).

use std::collections::HashMap;

/// The largest `.mailmap` read.
pub const MAX_MAILMAP_BYTES: u64 = 1 << 20;

/// The most lines a `.mailmap` read may have.
pub const MAX_MAILMAP_LINES: usize = 20_000;

/// What a name and email map to: either may be left as the commit has it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Proper {
    name: Option<String>,
    email: Option<String>,
}

/// The entries for one commit email: what it maps to whatever the name,
/// and what it maps to with particular names (ASCII lowercase keys).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct ByEmail {
    simple: Proper,
    by_name: HashMap<String, Proper>,
}

/// A mailmap: commit emails (ASCII lowercase) to what they stand for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mailmap {
    by_email: HashMap<String, ByEmail>,
    refused: Option<String>,
}

impl Mailmap {
    /// The map the text of a `.mailmap` holds; one past the budgets is an
    /// empty map that says why it was not read. `source` names the file in
    /// that reason.
    pub fn parse(text: &[u8], source: &str) -> Mailmap {
        if text.len() as u64 > MAX_MAILMAP_BYTES {
            return Mailmap::refused(format!(
                "{source} is {} bytes, more than the {} a mailmap may have: it was not read",
                text.len(),
                MAX_MAILMAP_BYTES
            ));
        }
        let mut map = Mailmap::default();
        for (n, line) in text.split(|b| *b == b'\n').enumerate() {
            if n >= MAX_MAILMAP_LINES && !(line.is_empty() && n == MAX_MAILMAP_LINES) {
                return Mailmap::refused(format!(
                    "{source} has more than the {MAX_MAILMAP_LINES} lines a mailmap may have: it was not read"
                ));
            }
            map.read_line(line);
        }
        map
    }

    /// An empty map, not read for `reason`.
    pub fn refused(reason: String) -> Mailmap {
        Mailmap {
            by_email: HashMap::new(),
            refused: Some(reason),
        }
    }

    /// Why the file was not read, when it was not.
    pub fn refusal(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// Whether the map maps nothing.
    pub fn is_empty(&self) -> bool {
        self.by_email.is_empty()
    }

    /// The name and email a person goes by, for a commit's `name` and
    /// `email` (themselves when the map says nothing of them).
    pub fn map<'a>(&'a self, name: &'a str, email: &'a str) -> (&'a str, &'a str) {
        let Some(entry) = self.by_email.get(&email.to_ascii_lowercase()) else {
            return (name, email);
        };
        let proper = entry
            .by_name
            .get(&name.to_ascii_lowercase())
            .unwrap_or(&entry.simple);
        (
            proper.name.as_deref().unwrap_or(name),
            proper.email.as_deref().unwrap_or(email),
        )
    }

    /// One line, as git's `read_mailmap_line`.
    fn read_line(&mut self, line: &[u8]) {
        if line.first() == Some(&b'#') {
            return;
        }
        let Some((name1, email1, rest)) = name_and_email(line, false) else {
            return;
        };
        let (name2, email2) = match rest.and_then(|r| name_and_email(r, true)) {
            Some((n, e, _)) => (n, Some(e)),
            None => (None, None),
        };
        let (new_email, old_email) = match email2 {
            Some(old) => (Some(email1), old),
            None => (None, email1),
        };
        let entry = self
            .by_email
            .entry(text(old_email).to_ascii_lowercase())
            .or_default();
        match name2 {
            None => {
                if let Some(n) = name1 {
                    entry.simple.name = Some(text(n));
                }
                if let Some(e) = new_email {
                    entry.simple.email = Some(text(e));
                }
            }
            Some(old_name) => {
                entry.by_name.insert(
                    text(old_name).to_ascii_lowercase(),
                    Proper {
                        name: name1.map(text),
                        email: new_email.map(text),
                    },
                );
            }
        }
    }
}

/// Bytes as text, invalid UTF-8 replaced.
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// git's `parse_name_and_email`: the name before the first `<` (trimmed;
/// None when empty), the email up to the next `>`, and what follows when
/// anything does. None without `<…>`, or with `<>` unless `allow_empty`.
fn name_and_email(buffer: &[u8], allow_empty: bool) -> Option<NameAndEmail<'_>> {
    let left = buffer.iter().position(|b| *b == b'<')?;
    let right = left + 1 + buffer[left + 1..].iter().position(|b| *b == b'>')?;
    if !allow_empty && right == left + 1 {
        return None;
    }
    let name = buffer[..left].trim_ascii();
    let rest = &buffer[right + 1..];
    Some((
        (!name.is_empty()).then_some(name),
        &buffer[left + 1..right],
        (!rest.is_empty()).then_some(rest),
    ))
}

/// A name (if any), an email, and what follows them (if anything).
type NameAndEmail<'a> = (Option<&'a [u8]>, &'a [u8], Option<&'a [u8]>);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// git's four forms, a comment, a line without an email, case, and a
    /// later line over an earlier one: each lookup pinned.
    #[test]
    fn the_four_forms_map_as_gits_mailmap() {
        let text = b"# A comment <not@this>\n\
            Proper Name <old@x>\n\
            <proper@x> <bob@old>\n\
            Cyd Proper <cyd@proper> <CYD@old>\n\
            Dee Proper <dee@proper> Dee Old <dee@old>\n\
            Dee Other <other@proper> dee TYPO <dee@old>\n\
            no email here\n\
            Empty <>\n\
            Late Name <old@x> trailing text\n\
            \n";
        let m = Mailmap::parse(text, ".mailmap");
        assert_eq!(m.refusal(), None);
        let cases = [
            (("old", "OLD@x"), ("Late Name", "OLD@x")),
            (("Bob", "bob@old"), ("Bob", "proper@x")),
            (("Cyd", "cyd@OLD"), ("Cyd Proper", "cyd@proper")),
            (("Dee Old", "dee@old"), ("Dee Proper", "dee@proper")),
            (("dee typo", "dee@old"), ("Dee Other", "other@proper")),
            // The email is known only with other names: left as it is.
            (("Someone", "dee@old"), ("Someone", "dee@old")),
            (("Ada", "ada@x"), ("Ada", "ada@x")),
            (("Not", "not@this"), ("Not", "not@this")),
        ];
        for ((name, email), want) in cases {
            assert_eq!(m.map(name, email), want, "{name} <{email}>");
        }
        assert_eq!(m.by_email.len(), 4);
    }

    #[test]
    fn a_mailmap_past_its_budget_is_not_read() {
        let big = vec![b'#'; MAX_MAILMAP_BYTES as usize + 1];
        let m = Mailmap::parse(&big, ".mailmap");
        assert!(m.is_empty());
        assert!(m.refusal().unwrap().contains("1048577 bytes"));
        let many = "A <a@x>\n".repeat(MAX_MAILMAP_LINES + 1);
        let m = Mailmap::parse(many.as_bytes(), ".mailmap");
        assert!(m.is_empty());
        assert!(m.refusal().unwrap().contains("lines"));
        // Exactly at the bound, a last newline included, it is read.
        let at = "A <a@x>\n".repeat(MAX_MAILMAP_LINES);
        let m = Mailmap::parse(at.as_bytes(), ".mailmap");
        assert_eq!(m.refusal(), None);
        assert_eq!(m.map("x", "a@x"), ("A", "a@x"));
    }

    proptest! {
        /// Any bytes: no panic, and every lookup gives a name and email.
        #[test]
        fn any_bytes_parse(text in proptest::collection::vec(any::<u8>(), 0..400)) {
            let m = Mailmap::parse(&text, ".mailmap");
            let _ = m.map("a", "b");
        }

        /// A line of the third form, made of plain parts, maps its commit
        /// email (in any case) to its proper name and email.
        #[test]
        fn a_written_entry_is_found(
            name in "[A-Za-z][A-Za-z ]{0,10}[A-Za-z]",
            proper in "[a-z]{1,8}@[a-z]{1,8}",
            old in "[a-z]{1,8}@[a-z]{1,8}",
        ) {
            let line = format!("{name} <{proper}> <{old}>\n");
            let m = Mailmap::parse(line.as_bytes(), ".mailmap");
            let upper = old.to_ascii_uppercase();
            prop_assert_eq!(m.map("whoever", &upper), (name.as_str(), proper.as_str()));
        }
    }
}
