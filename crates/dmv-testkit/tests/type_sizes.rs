//! No type in a DMV crate has more than [`MAX_PUBLIC_METHODS`] public
//! methods: a type that grows past it does several jobs, and is split into
//! views by concern (as `Repository` is: `repo.history()`, `repo.copies()`,
//! …). Counted over the inherent `impl` blocks at the top of every source
//! file (`pub fn` at the block's first indentation), whichever file of the
//! crate adds them.

use std::collections::BTreeMap;
use std::path::Path;

use dmv_testkit::rust_files;

const MAX_PUBLIC_METHODS: usize = 60;

/// The type an inherent `impl` line opens a block for (`impl<'r> View<'r> {`
/// gives `View`); `None` for trait impls and anything else.
fn inherent_impl(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("impl")?;
    let rest = if rest.starts_with('<') {
        let mut depth = 0;
        let end = rest.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        &rest[end + 1..]
    } else {
        rest
    };
    let rest = rest.strip_prefix(' ')?;
    if !line.trim_end().ends_with('{') || line.contains(" for ") {
        return None;
    }
    let name: &str = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()?;
    (!name.is_empty()).then_some(name)
}

/// Public methods per type, over the given sources of one crate.
fn public_methods<'a>(sources: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for src in sources {
        let mut open: Option<&str> = None;
        for line in src.lines() {
            match open {
                None => open = inherent_impl(line),
                Some(_) if line.starts_with('}') => open = None,
                Some(ty) => {
                    if line.starts_with("    pub fn ") {
                        *counts.entry(ty.to_string()).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    counts
}

#[test]
fn no_type_has_more_than_sixty_public_methods() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    let mut largest = (String::new(), 0);
    for krate in std::fs::read_dir(&root).unwrap().flatten() {
        let src = krate.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let sources: Vec<String> = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        let name = krate.file_name().to_string_lossy().to_string();
        for (ty, n) in public_methods(sources.iter().map(String::as_str)) {
            if n > largest.1 {
                largest = (format!("{name} {ty}"), n);
            }
            if n > MAX_PUBLIC_METHODS {
                problems.push(format!("{name}: {ty} has {n} public methods"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "split these into views by concern (at most {MAX_PUBLIC_METHODS} public methods a type):\n{}",
        problems.join("\n")
    );
    // The scan saw the crates' types at all (the repository's views are
    // counted apart from the repository).
    assert!(largest.1 >= 20, "largest type seen: {largest:?}");
}

#[test]
fn the_count_sees_inherent_impls_in_every_file_and_skips_traits() {
    let a = "impl Repo {\n    pub fn a(&self) {}\n    fn private(&self) {}\n    pub(crate) fn c(&self) {}\n}\n\
             impl Display for Repo {\n    pub fn not_counted() {}\n}\n";
    let b = "impl<'r> View<'r> {\n    pub fn v(&self) {}\n}\nimpl Repo {\n    pub fn b(&self) {}\n        pub fn nested() {}\n}\n";
    let counts = public_methods([a, b].into_iter());
    assert_eq!(counts.get("Repo"), Some(&2));
    assert_eq!(counts.get("View"), Some(&1));
    assert_eq!(counts.get("Display"), None);
    assert_eq!(inherent_impl("impl<T: Into<u8>> Wrap<T> {"), Some("Wrap"));
}
