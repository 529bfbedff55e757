//! The layering rules of docs/architecture.md, checked on the source:
//!
//! 1. a crate's `[dependencies]` name only the DMV crates `LAYERS` allows it;
//! 2. no two files of a crate import each other, directly or round a longer loop;
//! 3. only front ends and the server build command-line and HTTP-server
//!    crates, and libraries start programs only in their transports.
//!
//! Rule 2 sees only paths: `use crate::a::X`, `crate::a::f()` anywhere in the
//! code, `self::x`, `super::x`, a child module's bare name, and names a module
//! binds with `use` (so after `pub use a::Foo` in lib.rs, `crate::Foo` is in
//! `a`). It cannot see a call to a method another file adds to a shared type
//! (`impl Repository { fn m() }` in b.rs, called as `repo.m()` from a.rs):
//! that takes type information. Such a call is still a dependency, and keeping
//! it one way is left to review.
//!
//! `DMV_LAYERING_ROOT=/path/to/checkout` checks another checkout instead.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Each DMV crate and the DMV crates its `[dependencies]` may name. A crate
/// missing here fails the test: decide where it sits, then add it.
const LAYERS: &[(&str, &[&str])] = &[
    // The calls that differ between Unix and Windows, under every crate that makes them.
    ("dmv-os", &[]),
    ("dmv-store", &["dmv-os"]),
    ("dmv-refs", &["dmv-os"]),
    // Media files read from their bytes (facts, a raw's preview, decoding): no DMV crate.
    ("dmv-media", &[]),
    // Sealing, keyed names and wrapped keys for remotes the user does not trust: no DMV crate.
    ("dmv-crypt", &[]),
    (
        "dmv-repo",
        &["dmv-os", "dmv-store", "dmv-refs", "dmv-media"],
    ),
    ("dmv-bucket", &["dmv-os", "dmv-store", "dmv-crypt"]),
    // The web UI's pages are made from a repository; the server (dmv-server) sends them.
    ("dmv-web", &["dmv-repo", "dmv-media", "dmv-review"]),
    // A Git repository's history converted into a repository.
    ("dmv-gitimport", &["dmv-repo"]),
    // Comments and reviews, read from and written to the repository's review log.
    ("dmv-review", &["dmv-repo"]),
    // The store and the refs reach dmv-sync only through dmv-repo's and dmv-bucket's re-exports.
    (
        "dmv-sync",
        &["dmv-os", "dmv-repo", "dmv-bucket", "dmv-review"],
    ),
    // The HTTP server: a leaf above the sync library, which embedders use without it.
    ("dmv-server", &["dmv-os", "dmv-repo", "dmv-web", "dmv-sync"]),
    // A revision as a read-only folder through FUSE, reading what is not here from other replicas.
    ("dmv-mount", &["dmv-repo", "dmv-sync"]),
    (
        "dmv-cli",
        &[
            "dmv-os",
            "dmv-store",
            "dmv-refs",
            "dmv-repo",
            "dmv-bucket",
            "dmv-web",
            "dmv-gitimport",
            "dmv-sync",
            "dmv-server",
            "dmv-agent",
            "dmv-mount",
            "dmv-review",
        ],
    ),
    // When a batch of changes in a folder has settled, for `dmv watch`: file events and stat, no DMV crate.
    ("dmv-watch", &["dmv-os"]),
    // What runs unattended in a working tree (the watch loop, its log, its login service).
    (
        "dmv-agent",
        &["dmv-os", "dmv-repo", "dmv-sync", "dmv-watch"],
    ),
    // Every crate's tests use it, so it must sit below all of them.
    ("dmv-testkit", &[]),
    // Behaviour tests' fixtures (replicas over in-process remotes): a dev-dependency of the crates using them.
    ("dmv-fixtures", &["dmv-repo", "dmv-sync"]),
];

fn workspace() -> PathBuf {
    std::env::var_os("DMV_LAYERING_ROOT")
        .filter(|root| !root.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
            PathBuf::from,
        )
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut paths = entries
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    paths.sort();
    Ok(paths)
}

/// Each crate under crates/ as (its package name, its directory, its Cargo.toml).
fn crates(root: &Path) -> Result<Vec<(String, PathBuf, String)>, String> {
    let mut out = Vec::new();
    for dir in list(&root.join("crates"))? {
        let manifest = dir.join("Cargo.toml");
        if manifest.is_file() {
            let text = read(&manifest)?;
            let name = package_name(&text).unwrap_or_else(|| {
                dir.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            });
            out.push((name, dir, text));
        }
    }
    Ok(out)
}

// ---- Rule 1: crates ----

fn unquote(s: &str) -> String {
    s.trim().trim_matches(['"', '\'']).to_string()
}

/// A `key = "value"` of an inline table or of the lines of a table, if present.
fn field(spec: &str, key: &str) -> Option<String> {
    spec.split([',', '{', '}', '\n'])
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| unquote(v))
}

fn package_name(manifest: &str) -> Option<String> {
    let start = manifest.find("[package]")?;
    let table = manifest[start + 9..].split("\n[").next().unwrap_or("");
    table
        .lines()
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == "name")
        .map(|(_, value)| unquote(value))
}

/// Every dependency of the normal kind, as (key, spec): `[dependencies]`,
/// `[target.'cfg(…)'.dependencies]` and `[dependencies.name]` tables count;
/// dev- and build-dependencies do not.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut deps: Vec<(String, String)> = Vec::new();
    // None: another table; Some(None): a list of dependencies; Some(Some(i)): the table of deps[i].
    let mut table: Option<Option<usize>> = None;
    for line in manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if let Some(header) = line.strip_prefix('[') {
            let parts: Vec<&str> = header
                .split(']')
                .next()
                .unwrap_or("")
                .split('.')
                .map(str::trim)
                .collect();
            table = match parts.iter().rposition(|p| *p == "dependencies") {
                Some(k) if k == 0 || parts[0] == "target" => match parts.get(k + 1) {
                    Some(name) => {
                        deps.push((unquote(name), String::new()));
                        Some(Some(deps.len() - 1))
                    }
                    None => Some(None),
                },
                _ => None,
            };
        } else if let (Some(None), Some((key, value))) = (table, line.split_once('=')) {
            // `name.workspace = true` is the dotted form of `name = { workspace = true }`.
            let (name, spec) = match key.split_once('.') {
                Some((name, inner)) => (unquote(name), format!("{inner} = {value}")),
                None => (unquote(key), value.to_string()),
            };
            match deps.iter_mut().find(|(n, _)| *n == name) {
                Some((_, s)) => *s = format!("{s}\n{spec}"),
                None => deps.push((name, spec)),
            }
        } else if let Some(Some(i)) = table {
            deps[i].1 = format!("{}\n{line}", deps[i].1);
        }
    }
    deps
}

/// What breaks `layers` in the given crates, as (package name, manifest).
fn layer_problems(layers: &[(&str, &[&str])], crates: &[(String, String)]) -> Vec<String> {
    let allowed_by: BTreeMap<&str, &[&str]> = layers.iter().copied().collect();
    let names: BTreeSet<&str> = crates.iter().map(|(name, _)| name.as_str()).collect();
    let mut problems = Vec::new();
    for (name, manifest) in crates {
        let Some(allowed) = allowed_by.get(name.as_str()) else {
            problems.push(format!("{name} is not in LAYERS in {}: decide which DMV crates it may use and add it there", file!()));
            continue;
        };
        for (key, spec) in dependencies(manifest) {
            let dep = field(&spec, "package").unwrap_or(key);
            if (names.contains(dep.as_str()) || field(&spec, "path").is_some())
                && !allowed.contains(&dep.as_str())
            {
                problems.push(format!(
                    "{name} depends on {dep}; LAYERS lets it use only {allowed:?}"
                ));
            }
        }
    }
    for (name, _) in layers.iter().filter(|(name, _)| !names.contains(name)) {
        problems.push(format!(
            "{name} is in LAYERS in {} but not under crates/: remove it",
            file!()
        ));
    }
    problems
}

#[test]
fn crates_use_only_the_crates_below_them() -> Result<(), String> {
    let crates: Vec<(String, String)> = crates(&workspace())?
        .into_iter()
        .map(|(name, _, manifest)| (name, manifest))
        .collect();
    let problems = layer_problems(LAYERS, &crates);
    assert!(
        problems.is_empty(),
        "crate layering broken:\n{}",
        problems.join("\n")
    );
    Ok(())
}

// ---- Rule 2: files ----

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The string literal starting at `i` (with any `b`, `c`, `r`, `#` prefix) as
/// (start of its text, end of its text, end of the literal).
fn string_at(c: &[char], i: usize) -> Option<(usize, usize, usize)> {
    let mut j = i + usize::from(matches!(c[i], 'b' | 'c'));
    let raw = c.get(j) == Some(&'r');
    j += usize::from(raw);
    let hashes = c[j.min(c.len())..]
        .iter()
        .take_while(|&&h| h == '#' && raw)
        .count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    let mut k = j + 1;
    while k < c.len() {
        if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
            return Some((j + 1, k, k + 1 + hashes));
        }
        k += if c[k] == '\\' && !raw { 2 } else { 1 };
    }
    Some((j + 1, c.len(), c.len()))
}

/// The source with comments and string and char literals blanked, newlines
/// kept so lines stay right. A string inside an attribute that is only a path
/// (`#[serde(serialize_with = "crate::a::f")]`) names code, so it is kept.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let (mut i, mut attr_depth, mut last, mut before_last) = (0, 0usize, ' ', ' ');
    while i < c.len() {
        let at = |s: &str| {
            s.chars()
                .enumerate()
                .all(|(k, ch)| c.get(i + k) == Some(&ch))
        };
        // A `b`, `c` or `r` prefix starts a literal only where a token starts (`r#type` is an identifier, and string_at says so).
        let string = if c[i] == '"' || i == 0 || !is_ident(c[i - 1]) {
            string_at(&c, i)
        } else {
            None
        };
        let end = if at("//") {
            c[i..]
                .iter()
                .position(|&ch| ch == '\n')
                .map_or(c.len(), |p| i + p)
        } else if at("/*") {
            // Block comments nest.
            let (mut j, mut depth) = (i, 0);
            while j < c.len() {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    (depth, j) = (depth + 1, j + 2);
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    (depth, j) = (depth - 1, j + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j.min(c.len())
        } else if let Some((start, stop, end)) = string {
            let text: String = c[start..stop].iter().collect();
            let segments: Vec<&str> = text.split("::").collect();
            if attr_depth > 0
                && segments.len() > 1
                && matches!(segments[0], "crate" | "self" | "super")
                && segments
                    .iter()
                    .all(|s| !s.is_empty() && s.chars().all(is_ident))
            {
                out.extend(
                    std::iter::repeat_n(' ', start - i)
                        .chain(text.chars())
                        .chain(std::iter::repeat_n(' ', end - stop)),
                );
                i = end;
                continue;
            }
            end
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            c[(i + 3).min(c.len())..]
                .iter()
                .position(|&ch| ch == '\'')
                .map_or(c.len(), |p| i + 4 + p)
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i + 3
        } else {
            // Not a literal (a lifetime's quote is code too).
            match c[i] {
                '[' if attr_depth > 0 => attr_depth += 1,
                '[' if last == '#' || (last == '!' && before_last == '#') => attr_depth = 1,
                ']' if attr_depth > 0 => attr_depth -= 1,
                _ => {}
            }
            if !c[i].is_whitespace() {
                (before_last, last) = (last, c[i]);
            }
            out.push(c[i]);
            i += 1;
            continue;
        };
        out.extend(
            c[i..end]
                .iter()
                .map(|&ch| if ch == '\n' { '\n' } else { ' ' }),
        );
        i = end;
    }
    out
}

#[derive(Clone)]
struct Tok {
    text: String,
    line: usize,
}

/// Identifiers (`$crate` is one), `::`, and every other character alone.
fn tokens(code: &str) -> Vec<Tok> {
    let mut toks: Vec<Tok> = Vec::new();
    let mut line = 1;
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        line += usize::from(c == '\n');
        if c.is_whitespace() {
            continue;
        }
        let mut text = c.to_string();
        while is_ident(c) && chars.peek().is_some_and(|&d| is_ident(d))
            || c == ':' && text == ":" && chars.peek() == Some(&':')
        {
            text.extend(chars.next());
        }
        toks.push(Tok { text, line });
    }
    toks
}

/// Index just past the bracket group opening at `i`.
fn group_end(toks: &[Tok], mut i: usize) -> usize {
    let mut depth = 0usize;
    while let Some(t) = toks.get(i) {
        i += 1;
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" if depth <= 1 => return i,
            ")" | "]" | "}" => depth -= 1,
            _ => {}
        }
    }
    i
}

const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];

/// The tokens without `#[cfg(test)]` items, since tests may reach anywhere;
/// also the children declared `#[cfg(test)] mod x;` (test code in their own
/// files) and whether the whole file is `#![cfg(test)]`.
fn without_tests(toks: Vec<Tok>) -> (Vec<Tok>, Vec<String>, bool) {
    let is = |i: usize, pattern: &[&str]| {
        pattern
            .iter()
            .enumerate()
            .all(|(k, p)| toks.get(i + k).is_some_and(|t| t.text == *p))
    };
    let whole_file = (0..toks.len()).any(|i| is(i, &["#", "!"]) && is(i + 2, &CFG_TEST[1..]));
    let (mut kept, mut test_mods, mut i) = (Vec::new(), Vec::new(), 0);
    while i < toks.len() {
        if !is(i, &CFG_TEST) {
            kept.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += CFG_TEST.len();
        while is(i, &["#", "["]) {
            i = group_end(&toks, i + 1);
        }
        if is(i, &["mod"]) && is(i + 2, &[";"]) {
            test_mods.push(toks[i + 1].text.clone());
        }
        // The item ends at its `;` or with its body.
        while let Some(t) = toks.get(i) {
            match t.text.as_str() {
                ";" => break,
                "{" => {
                    i = group_end(&toks, i) - 1;
                    break;
                }
                "(" | "[" => i = group_end(&toks, i),
                _ => i += 1,
            }
        }
        i += 1;
    }
    (kept, test_mods, whole_file)
}

/// One path a file names: from the crate root (None: outside the crate), the
/// name a `use` binds it to, the line of its last segment, and how it appears.
struct Ref {
    path: Option<Vec<String>>,
    name: String,
    line: usize,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Path,
    Use,
    PubUse,
}

/// Reads the use tree or plain path at `i` into `out` as (segments, bound
/// name, line): `a::{b::{x, y}, c as d, self}` gives `a::b::x`, `a::b::y`,
/// `a::c` bound as `d`, and `a`. Returns the index just past it.
fn use_tree(
    toks: &[Tok],
    i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, String, usize)>,
) -> usize {
    let text = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    match text(i) {
        "{" => {
            let mut j = i + 1;
            while !matches!(text(j), "}" | "") {
                j = use_tree(toks, j, prefix, out);
                j += usize::from(text(j) == ",");
            }
            j + 1
        }
        "*" => {
            out.push((
                [prefix, &["*".to_string()]].concat(),
                "*".to_string(),
                toks[i].line,
            ));
            i + 1
        }
        segment if segment.starts_with(is_ident) => {
            let mut path = prefix.to_vec();
            if segment != "self" || prefix.is_empty() {
                path.push(segment.to_string());
            }
            if text(i + 1) == "::"
                && (text(i + 2).starts_with(is_ident) || matches!(text(i + 2), "{" | "*"))
            {
                return use_tree(toks, i + 2, &path, out);
            }
            let (name, end) = if text(i + 1) == "as" {
                (text(i + 2), i + 3)
            } else {
                (path.last().map_or("", String::as_str), i + 1)
            };
            let line = toks.get(end - 1).or(toks.get(i)).map_or(0, |t| t.line);
            out.push((path.clone(), name.to_string(), line));
            end
        }
        _ => i + 1,
    }
}

/// Every path in one file's tokens.
fn references(module: &str, toks: &[Tok], modules: &BTreeSet<String>) -> Vec<Ref> {
    let text = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    let file_scope: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let is_child =
        |name: &str| modules.contains(&[&file_scope[..], &[name.to_string()]].concat().join("::"));
    // Inline `mod x { … }` blocks open here, with the brace depth they close at: `super::` inside counts from them.
    let (mut inline, mut depth, mut refs, mut i) =
        (Vec::<(String, usize)>::new(), 0usize, Vec::new(), 0);
    while i < toks.len() {
        let t = text(i);
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if text(i + 2) == "{" => inline.push((text(i + 1).to_string(), depth)),
            _ => {}
        }
        let prev = if i == 0 { "" } else { text(i - 1) };
        // `pub(in crate::a)` restricts visibility; it does not use `a`.
        let visibility = prev == "in" && i >= 3 && text(i - 2) == "(" && text(i - 3) == "pub";
        let path_start = prev != "::"
            && text(i + 1) == "::"
            && !visibility
            && (matches!(t, "crate" | "$crate" | "self" | "super") || is_child(t));
        if t != "use" && !path_start {
            i += 1;
            continue;
        }
        let kind = match t {
            // `pub use` and `pub(crate) use` alike: a name other modules may reach through this one.
            "use"
                if prev == "pub"
                    || (prev == ")"
                        && (0..i)
                            .rev()
                            .find(|&j| text(j) == "(")
                            .is_some_and(|j| j > 0 && text(j - 1) == "pub")) =>
            {
                Kind::PubUse
            }
            "use" => Kind::Use,
            _ => Kind::Path,
        };
        let scope: Vec<String> = file_scope
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        let mut found = Vec::new();
        i = use_tree(toks, i + usize::from(t == "use"), &[], &mut found);
        for (segments, name, line) in found {
            let rest = |n: usize| segments[n.min(segments.len())..].to_vec();
            let path = match segments.first().map(String::as_str) {
                Some("crate" | "$crate") => Some(rest(1)),
                Some("self") => Some([&scope[..], &rest(1)].concat()),
                Some("super") => {
                    let ups = segments.iter().take_while(|s| *s == "super").count();
                    Some([&scope[..scope.len().saturating_sub(ups)], &rest(ups)].concat())
                }
                Some(first) if is_child(first) => Some([&file_scope[..], &segments].concat()),
                _ => None,
            };
            if path.is_some() || kind != Kind::Path {
                refs.push(Ref {
                    path,
                    name,
                    line,
                    kind,
                });
            }
        }
    }
    refs
}

fn in_subtree(module: &str, root: &str) -> bool {
    root.is_empty() || module == root || module.starts_with(&format!("{root}::"))
}

/// (module, name) → whether a `use` in that module binds the name publicly,
/// and where to (None: outside the crate).
type Bindings = BTreeMap<(String, String), (bool, Option<Vec<String>>)>;

/// The module a path from the crate root, named in module `from`, lands in:
/// its longest prefix that is a module, unless the next segment is a name that
/// module binds with `use` visibly to `from` (publicly, or privately to its
/// own descendants, as Rust does), then wherever that leads. None: outside the crate.
fn resolve(
    from: &str,
    path: &[String],
    modules: &BTreeSet<String>,
    bindings: &Bindings,
    hops: usize,
) -> Option<String> {
    let n = (1..=path.len())
        .rev()
        .find(|&n| modules.contains(&path[..n].join("::")))
        .unwrap_or(0);
    let module = path[..n].join("::");
    match path
        .get(n)
        .and_then(|name| bindings.get(&(module.clone(), name.clone())))
    {
        Some((public, target)) if (*public || in_subtree(from, &module)) && hops < 16 => {
            match target {
                Some(target) => resolve(
                    from,
                    &[&target[..], &path[n + 1..]].concat(),
                    modules,
                    bindings,
                    hops + 1,
                ),
                None => None,
            }
        }
        _ => Some(module),
    }
}

/// (from, to) → the first `file:line` where module `from` names module `to`.
type Edges = BTreeMap<(String, String), String>;

/// The edges between the modules of one crate, given as (module path, file
/// shown in messages, source); the root module is "".
fn module_edges(files: &[(String, String, String)]) -> Edges {
    let mut scanned = Vec::new();
    let mut test_only = BTreeSet::new();
    for (module, file, src) in files {
        let (toks, test_children, whole_file) = without_tests(tokens(&code_only(src)));
        test_only.extend(test_children.iter().map(|child| {
            if module.is_empty() {
                child.clone()
            } else {
                format!("{module}::{child}")
            }
        }));
        if whole_file {
            test_only.insert(module.clone());
        }
        scanned.push((module, file, toks));
    }
    scanned.retain(|(module, _, _)| !test_only.iter().any(|t| in_subtree(module, t)));
    let modules: BTreeSet<String> = scanned
        .iter()
        .map(|(module, _, _)| module.to_string())
        .collect();
    let mut bindings = Bindings::new();
    let mut refs = Vec::new();
    for (module, file, toks) in &scanned {
        for r in references(module, toks, &modules) {
            if r.kind != Kind::Path && r.name != "*" && r.name != "_" {
                bindings.insert(
                    (module.to_string(), r.name.clone()),
                    (r.kind == Kind::PubUse, r.path.clone()),
                );
            }
            refs.push((module, file, r));
        }
    }
    let mut edges = Edges::new();
    for (module, file, r) in refs {
        let Some(target) = r
            .path
            .and_then(|path| resolve(module, &path, &modules, &bindings, 0))
        else {
            continue;
        };
        // Re-exporting its own submodules' names is how a module offers them, not a use of them.
        let facade = r.kind == Kind::PubUse && in_subtree(&target, module);
        if target != **module && !facade {
            edges
                .entry((module.to_string(), target))
                .or_insert_with(|| format!("{file}:{}", r.line));
        }
    }
    edges
}

/// Loops among the modules, each as `[a, b, …, a]`: an edge a → b is on a
/// loop when b reaches a, and the shortest way back is shown for every such
/// edge not already shown in an earlier loop.
fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    let next = |from: &str| -> Vec<String> {
        edges
            .keys()
            .filter(|(a, _)| a == from)
            .map(|(_, b)| b.clone())
            .collect()
    };
    // Shortest path from → to, by breadth-first search.
    let path = |from: &str, to: &str| -> Option<Vec<String>> {
        let mut came_from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = VecDeque::from([from.to_string()]);
        while let Some(at) = queue.pop_front() {
            if at == to {
                let mut path = vec![at];
                while let Some(prev) = path.last().and_then(|m| came_from.get(m)) {
                    path.push(prev.clone());
                }
                path.reverse();
                return Some(path);
            }
            for n in next(&at) {
                if n != from && !came_from.contains_key(&n) {
                    came_from.insert(n.clone(), at.clone());
                    queue.push_back(n);
                }
            }
        }
        None
    };
    let mut shown: BTreeSet<(String, String)> = BTreeSet::new();
    let mut loops = Vec::new();
    for (a, b) in edges.keys() {
        if shown.contains(&(a.clone(), b.clone())) {
            continue;
        }
        if let Some(back) = path(b, a) {
            let cycle: Vec<String> = std::iter::once(a.clone()).chain(back).collect();
            shown.extend(cycle.windows(2).map(|w| (w[0].clone(), w[1].clone())));
            loops.push(cycle);
        }
    }
    loops
}

/// A crate's files as (module path, file, source): src/lib.rs (or src/main.rs)
/// is the root "", src/a.rs and src/a/mod.rs are `a`, src/a/b.rs is `a::b`.
/// src/bin/ and a src/main.rs beside src/lib.rs are roots of other crates, left out.
fn crate_files(src: &Path) -> Result<Vec<(String, PathBuf, String)>, String> {
    let has_lib = src.join("lib.rs").is_file();
    let (mut out, mut dirs) = (Vec::new(), vec![src.to_path_buf()]);
    while let Some(dir) = dirs.pop() {
        for path in list(&dir)? {
            let rel = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
            if path.is_dir() && rel != Path::new("bin") {
                dirs.push(path);
            } else if path.extension() == Some("rs".as_ref())
                && !(has_lib && rel == Path::new("main.rs"))
            {
                let mut segments: Vec<String> = rel
                    .with_extension("")
                    .iter()
                    .map(|s| s.to_string_lossy().into_owned())
                    .collect();
                if segments == ["lib"]
                    || segments == ["main"]
                    || segments.last().is_some_and(|s| s == "mod")
                {
                    segments.pop();
                }
                out.push((segments.join("::"), path.clone(), read(&path)?));
            }
        }
    }
    Ok(out)
}

/// `krate: a -> b -> a` and, for each step, where it is made; the root module shows as `crate`.
fn describe(krate: &str, cycle: &[String], edges: &Edges) -> String {
    let show = |m: &str| {
        if m.is_empty() {
            "crate".to_string()
        } else {
            m.to_string()
        }
    };
    let at = |a: &String, b: &String| {
        edges
            .get(&(a.clone(), b.clone()))
            .map_or("?", String::as_str)
            .to_string()
    };
    let steps = cycle.windows(2).map(|w| {
        format!(
            "\n    {} -> {}  {}",
            show(&w[0]),
            show(&w[1]),
            at(&w[0], &w[1])
        )
    });
    format!(
        "{krate}: {}{}",
        cycle
            .iter()
            .map(|m| show(m))
            .collect::<Vec<_>>()
            .join(" -> "),
        steps.collect::<String>()
    )
}

#[test]
fn no_two_files_of_a_crate_import_each_other() -> Result<(), String> {
    let root = workspace();
    let mut problems = Vec::new();
    for (name, dir, _) in crates(&root)? {
        if !dir.join("src").is_dir() {
            continue;
        }
        let files = crate_files(&dir.join("src"))?;
        let files: Vec<_> = files
            .into_iter()
            .map(|(module, path, src)| {
                (
                    module,
                    path.strip_prefix(&root)
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                    src,
                )
            })
            .collect();
        let edges = module_edges(&files);
        problems.extend(
            cycles(&edges)
                .iter()
                .map(|cycle| describe(&name, cycle, &edges)),
        );
    }
    assert!(
        problems.is_empty(),
        "files of a crate import each other (move what both need into a file below both):\n{}",
        problems.join("\n")
    );
    Ok(())
}

// ---- Rule 3: what only front ends and the server build ----

/// The DMV crates that are front ends or servers.
const FRONT_ENDS: &[&str] = &["dmv-cli", "dmv-server"];
/// Command-line, progress-bar and HTTP-server crates: an embedder of a library must not build them.
const FRONT_END_DEPENDENCIES: &[&str] = &[
    "clap",
    "clap_complete",
    "clap_mangen",
    "indicatif",
    "axum",
    "hyper",
    "hyper-util",
    "tokio-rustls",
];
/// Library files that may start programs, and why: the transports, and the merge tool a person configured.
const STARTS_PROGRAMS: &[(&str, &str)] = &[
    ("crates/dmv-sync/src/transport/ssh.rs", "the ssh transport runs ssh"),
    ("crates/dmv-sync/src/transport/stdio.rs", "a path remote is served by `dmv serve --stdio` in a child process unless the front end serves in process"),
    ("crates/dmv-repo/src/merge/mergetool.rs", "runs the merge tool the person configured"),
    ("crates/dmv-sync/src/serving/pre_receive.rs", "runs the pre-receive hook the server's admin configured"),
    ("crates/dmv-mount/src/unmount.rs", "unmounts through fusermount3, the one way FUSE lets a user who is not root"),
    ("crates/dmv-testkit/src/lib.rs", "the tests' helpers run dmv, git and servers"),
];

/// Which library crates depend on front-end crates, as "crate depends on dep".
fn front_end_problems(crates: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, manifest) in crates
        .iter()
        .filter(|(name, _)| !FRONT_ENDS.contains(&name.as_str()))
    {
        for (dep, _) in dependencies(manifest) {
            if FRONT_END_DEPENDENCIES.contains(&dep.as_str()) {
                problems.push(format!(
                    "{name} depends on {dep}, which only {} may",
                    FRONT_ENDS.join(" and ")
                ));
            }
        }
    }
    problems
}

#[test]
fn only_front_ends_and_the_server_build_command_lines_and_http_servers() -> Result<(), String> {
    let crates: Vec<(String, String)> = crates(&workspace())?
        .into_iter()
        .map(|(name, _, manifest)| (name, manifest))
        .collect();
    let problems = front_end_problems(&crates);
    assert!(
        problems.is_empty(),
        "libraries building front-end crates:\n{}",
        problems.join("\n")
    );
    // The check can fail: a library asking for clap is caught.
    let bad = front_end_problems(&[("dmv-repo".into(), "[dependencies]\nclap = \"4\"\n".into())]);
    assert_eq!(
        bad,
        vec!["dmv-repo depends on clap, which only dmv-cli and dmv-server may".to_string()]
    );
    Ok(())
}

#[test]
fn libraries_start_programs_only_in_their_transports() -> Result<(), String> {
    let root = workspace();
    let mut problems = Vec::new();
    for (name, dir, _) in crates(&root)? {
        if FRONT_ENDS.contains(&name.as_str()) || !dir.join("src").is_dir() {
            continue;
        }
        for (_, path, src) in crate_files(&dir.join("src"))? {
            let rel = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let code = code_only(&src);
            if (code.contains("process::Command") || code.contains("Command::new"))
                && !STARTS_PROGRAMS.iter().any(|(file, _)| *file == rel)
            {
                problems.push(rel);
            }
        }
    }
    assert!(problems.is_empty(), "library files starting programs outside the transports (see STARTS_PROGRAMS): {problems:?}");
    Ok(())
}

// ---- The checks above can fail ----

fn fake(files: &[(&str, &str)]) -> Edges {
    let files: Vec<_> = files
        .iter()
        .map(|(module, src)| (module.to_string(), format!("{module}.rs"), src.to_string()))
        .collect();
    module_edges(&files)
}

fn edge_list(edges: &Edges) -> Vec<String> {
    edges
        .iter()
        .map(|((a, b), at)| format!("{a}->{b}@{at}"))
        .collect()
}

fn cycle_list(edges: &Edges) -> Vec<String> {
    cycles(edges).iter().map(|c| c.join(">")).collect()
}

#[test]
fn the_scanner_finds_cycles_and_only_cycles() {
    // A re-export (renamed too) and a nested use tree make a loop.
    let loop_ = fake(&[
        ("", "mod a;\nmod b;\npub use a::{Thing, Other as Renamed};"),
        ("a", "use crate::{b::{x, y}, c};\npub struct Thing;"),
        ("b", "fn f() -> crate::Renamed {\n    crate::Thing\n}"),
    ]);
    assert_eq!(
        edge_list(&loop_),
        ["a->@a.rs:1", "a->b@a.rs:1", "b->a@b.rs:1"]
    );
    assert_eq!(cycle_list(&loop_), ["a>b>a"]);

    // One way only: comments, strings, char literals and test code do not count.
    let one_way = fake(&[
        ("", "mod a;\nmod b;"),
        ("a", "use crate::b::x;"),
        (
            "b",
            "// use crate::a::x;\n/// crate::a::doc\n/* crate::a::y /* nested */ crate::a::z */\nconst S: &str = \"crate::a::s\\\" crate::a::t\";\n\
             const R: &str = r#\"crate::a::\"r\"#;\nconst Q: char = '\"';\nfn g<'a>(s: &'a str) -> &'a str { s }\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::x;\n    fn t() { let _ = \"}\"; crate::a::y(); }\n}\n#[cfg(test)]\nuse crate::a::w;\npub fn after() {}",
        ),
    ]);
    assert_eq!(edge_list(&one_way), ["a->b@a.rs:1"]);
    assert!(cycles(&one_way).is_empty());

    // A path in an attribute's string is code; code after a skipped test module still counts.
    let attr = fake(&[
        ("", ""),
        ("a", "use crate::b::x;"),
        ("b", "#[cfg(test)]\nmod tests { use super::*; }\n#[derive(Serialize)]\nstruct S {\n    #[serde(serialize_with = \"crate::a::ser\")]\n    p: u8,\n}"),
    ]);
    assert_eq!(edge_list(&attr), ["a->b@a.rs:1", "b->a@b.rs:5"]);

    // super:: from a child is its parent's sibling; parent and child using each other is a loop; `mod y;` alone is no edge.
    let family = fake(&[
        ("", "mod x;\nmod z;"),
        ("x", "mod w;\nmod y;\nuse self::y::f;\npub fn g() {}"),
        ("x::y", "pub fn f() { super::g() }"),
        ("x::w", "use super::super::z::h;"),
        ("z", "pub fn h() {}"),
    ]);
    assert_eq!(
        edge_list(&family),
        ["x->x::y@x.rs:3", "x::w->z@x::w.rs:1", "x::y->x@x::y.rs:1"]
    );
    assert_eq!(cycle_list(&family), ["x>x::y>x"]);

    // Two loops through one module are both shown, a longer loop once; test-only files are skipped.
    let two = fake(&[
        (
            "",
            "mod merge; mod tree; mod worktree;\n#[cfg(test)]\nmod tests;",
        ),
        ("merge", "use crate::worktree::a;"),
        ("tree", "pub fn t() { crate::worktree::b() }"),
        ("worktree", "use crate::{merge::m, tree::t};"),
        ("tests", "use crate::merge::m;"),
    ]);
    assert_eq!(
        cycle_list(&two),
        ["merge>worktree>merge", "tree>worktree>tree"]
    );
    // A private `use` is seen by its module's descendants only: c's `crate::a::x` is a's own x, not b's.
    let long = fake(&[
        ("", ""),
        ("a", "use crate::b::x;"),
        ("b", "use crate::c::x;"),
        ("c", "fn f() { crate::a::x() }"),
    ]);
    assert_eq!(cycle_list(&long), ["a>b>c>a"]);
    assert_eq!(
        describe("k", &cycles(&long)[0], &long),
        "k: a -> b -> c -> a\n    a -> b  a.rs:1\n    b -> c  b.rs:1\n    c -> a  c.rs:1"
    );

    // The root's own code using a module that uses the root is a loop; `pub use dmv_store as store` leads outside.
    let root = fake(&[
        (
            "",
            "mod a;\npub use dmv_store as store;\nuse a::helper;\npub struct Root;",
        ),
        (
            "a",
            "use crate::store::Store;\npub fn helper() -> crate::Root { crate::Root }",
        ),
    ]);
    assert_eq!(cycle_list(&root), [">a>"]);

    // `pub use a::Foo as Baz` outside braces, followed through a second re-export in a parent module.
    let renamed = fake(&[
        ("", "pub use a::Foo as Baz;\npub use p::Deep;"),
        ("a", "pub struct Foo;"),
        ("p", "pub use self::q::Deep;"),
        ("p::q", "pub struct Deep;"),
        ("b", "fn f(_: crate::Baz, _: crate::Deep) {}"),
    ]);
    assert_eq!(edge_list(&renamed), ["b->a@b.rs:1", "b->p::q@b.rs:1"]);
}

#[test]
fn the_manifest_reader_sees_normal_dependencies_only() {
    let manifest = "[package]\nname = \"dmv-x\"\n\n[dependencies]\ndmv-store = { path = \"../dmv-store\" }\ndmv-refs.workspace = true\nserde = \"1\"\n\
                    # dmv-sync = { path = \"../dmv-sync\" }\nstore2 = { package = \"dmv-repo\", path = \"../dmv-repo\" }\n\
                    [target.'cfg(unix)'.dependencies]\ndmv-bucket = { path = \"../dmv-bucket\" }\n[dependencies.dmv-cli]\npath = \"../dmv-cli\"\n\
                    [dev-dependencies]\ndmv-testkit = { path = \"../dmv-testkit\" }\n[build-dependencies]\ndmv-sync = { path = \"../dmv-sync\" }";
    assert_eq!(package_name(manifest).as_deref(), Some("dmv-x"));
    let deps: Vec<(String, Option<String>, bool)> = dependencies(manifest)
        .into_iter()
        .map(|(key, spec)| (key, field(&spec, "package"), field(&spec, "path").is_some()))
        .collect();
    let expected = [
        ("dmv-store", None, true),
        ("dmv-refs", None, false),
        ("serde", None, false),
        ("store2", Some("dmv-repo"), true),
        ("dmv-bucket", None, true),
        ("dmv-cli", None, true),
    ];
    assert_eq!(
        deps,
        expected.map(|(k, p, path)| (k.to_string(), p.map(String::from), path))
    );
}

#[test]
fn the_layer_check_catches_what_it_should() {
    let layers: &[(&str, &[&str])] = &[("low", &[]), ("high", &["low"])];
    let crates = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(n, m)| (n.to_string(), m.to_string()))
            .collect()
    };
    let fine = crates(&[
        ("low", "[dev-dependencies]\nhigh = { path = \"../high\" }"),
        (
            "high",
            "[dependencies]\nlow = { path = \"../low\" }\nserde = \"1\"",
        ),
    ]);
    assert_eq!(layer_problems(layers, &fine), Vec::<String>::new());
    let upside_down = crates(&[
        ("low", "[dependencies]\nhigh = { path = \"../high\" }"),
        ("high", ""),
        ("new", ""),
    ]);
    let problems = layer_problems(layers, &upside_down);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("low depends on high;"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("new is not in LAYERS"),
        "{problems:?}"
    );
}

/// The sync library without its optional transports (`http`, `s3`) brings
/// none of their crates: an embedder that only syncs over paths, ssh or in
/// process gets no HTTP client, TLS, async runtime or object-store SDK.
#[test]
fn the_sync_library_without_its_optional_transports_has_no_http_tls_or_s3_crates() {
    let tree = |features: &[&str]| -> String {
        let out = std::process::Command::new(env!("CARGO"))
            .current_dir(workspace())
            .args(["tree", "--offline", "-p", "dmv-sync", "-e", "normal"])
            .args(["--prefix", "none", "--format", "{p}"])
            .args(features)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let names = |tree: &str| -> BTreeSet<String> {
        tree.lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(String::from)
            .collect()
    };
    let heavy = [
        "reqwest",
        "opendal",
        "rustls",
        "hyper",
        "tokio",
        "dmv-bucket",
    ];
    let all = names(&tree(&[]));
    let lean = names(&tree(&["--no-default-features"]));
    for name in heavy {
        // With the default features each is there: the check can see it.
        assert!(all.contains(name), "{name} is not in the default tree");
        assert!(
            !lean.contains(name),
            "{name} is in the tree without the optional transports"
        );
    }
}

// ---- Rule 4: a crate's folders in their documented order ----

/// Crates whose top-level modules (folders, and the files beside them) keep
/// an order, bottom first: a module imports only modules listed before it.
/// A top-level module missing from its crate's list fails the test. The
/// order is the one the crate's lib.rs documents.
const FOLDER_ORDERS: &[(&str, &[&str])] = &[
    (
        "dmv-repo",
        &[
            "stat",
            "paths",
            "pathmap",
            "seal",
            "time",
            "sizes",
            "ref_names",
            "resolution",
            "error",
            "atomic",
            "parallel",
            "line_merge",
            "repository",
            "history",
            "replica",
            "worktree",
            "merge",
            "operations",
        ],
    ),
    (
        "dmv-sync",
        &["protocol", "transport", "serving", "operations"],
    ),
];

/// The edges of `edges` between top-level modules, the first place each is made.
fn folder_edges(edges: &Edges) -> Edges {
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let mut folders = Edges::new();
    for ((a, b), at) in edges {
        let (a, b) = (top(a), top(b));
        if a != b && !a.is_empty() && !b.is_empty() {
            folders.entry((a, b)).or_insert_with(|| at.clone());
        }
    }
    folders
}

/// Each import of a module listed at or above the importer, as a message.
fn folder_order_problems(krate: &str, order: &[&str], edges: &Edges) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| *o == m);
    let mut problems = Vec::new();
    for ((a, b), at) in folder_edges(edges) {
        match (rank(&a), rank(&b)) {
            (Some(ra), Some(rb)) if rb < ra => {}
            (Some(_), Some(_)) => {
                problems.push(format!("{krate}: {a} imports {b}, listed above it  {at}"))
            }
            (None, _) => problems.push(format!("{krate}: {a} is in no folder order")),
            (_, None) => problems.push(format!("{krate}: {b} is in no folder order")),
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

#[test]
fn folders_import_only_the_folders_below_them() -> Result<(), String> {
    let root = workspace();
    let mut problems = Vec::new();
    for (name, dir, _) in crates(&root)? {
        let Some((_, order)) = FOLDER_ORDERS.iter().find(|(k, _)| *k == name) else {
            continue;
        };
        let files: Vec<_> = crate_files(&dir.join("src"))?
            .into_iter()
            .map(|(module, path, src)| {
                let shown = path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                (module, shown, src)
            })
            .collect();
        problems.extend(folder_order_problems(&name, order, &module_edges(&files)));
    }
    assert!(
        problems.is_empty(),
        "a folder imports one above it (move what both need below both):\n{}",
        problems.join("\n")
    );
    Ok(())
}

#[test]
fn the_folder_check_catches_an_import_upward() {
    let edges = fake(&[
        ("", "mod low; mod high;"),
        ("low", "use crate::high::X;"),
        ("low::inner", "use crate::low::Y;"),
        ("high", "use crate::low::Y;"),
    ]);
    assert_eq!(
        folder_order_problems("k", &["low", "high"], &edges).len(),
        1,
        "{edges:?}"
    );
    assert!(folder_order_problems("k", &["high", "low"], &edges).len() == 1);
    assert!(folder_order_problems("k", &["low"], &edges)[0].contains("high is in no folder order"));
}
