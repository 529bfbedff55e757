//! `--stat` as git draws it (diff.c's `show_stats`): per file its name, the
//! lines changed and a bar of `+` and `-` scaled to fit the width, or for a
//! binary file `Bin OLD -> NEW bytes`; then ` N files changed, I
//! insertions(+), D deletions(-)`.

use std::io::Write;
use std::sync::OnceLock;

use anyhow::Result;
use dmv_repo::{Change, FlatEntry, Listed, Repository};

use crate::repo_args::show_path;
use crate::terminal::{paint, Style};

/// What one file's line says.
enum Counted {
    /// A text file: lines put in and taken out.
    Lines { added: usize, removed: usize },
    /// Any other file: its sizes before and after.
    Bytes { before: u64, after: u64 },
}

struct FileStat {
    name: String,
    counted: Counted,
}

static COLUMNS: OnceLock<usize> = OnceLock::new();

/// The width git gives a diffstat: $COLUMNS, else the terminal's when
/// standard output is one, else 80. Called before a pager takes standard
/// output (as git reads it then), and read when a diffstat is drawn.
pub fn note_columns() -> usize {
    *COLUMNS.get_or_init(|| {
        if let Some(n) = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
        {
            return n;
        }
        terminal_columns().unwrap_or(80)
    })
}

#[cfg(unix)]
fn terminal_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes one winsize into the struct given, which
    // lives through the call.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let asked = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut size) };
    (asked == 0 && size.ws_col > 0).then_some(size.ws_col as usize)
}

#[cfg(not(unix))]
fn terminal_columns() -> Option<usize> {
    None
}

/// The diffstat of `changes` (the versions they read already fetched).
pub fn write_stat(
    out: &mut impl Write,
    repo: &Repository,
    changes: &[Change],
    new_in_worktree: bool,
) -> Result<()> {
    let mut files = Vec::new();
    for listed in dmv_repo::find_renames(&repo.store, changes.to_vec())? {
        let (name, old, new, path) = match listed {
            Listed::Change(c) => (show_path(&c.path).to_string(), c.old, c.new, c.path),
            Listed::Renamed {
                from, to, old, new, ..
            } => (
                renamed_name(&show_path(&from), &show_path(&to)),
                Some(old),
                Some(new),
                to,
            ),
        };
        let counted = count(repo, old.as_ref(), new.as_ref(), &path, new_in_worktree)?;
        files.push(FileStat { name, counted });
    }
    write_files(out, &files, note_columns())
}

/// Lines put in and taken out when both sides are text, else sizes.
fn count(
    repo: &Repository,
    old: Option<&FlatEntry>,
    new: Option<&FlatEntry>,
    path: &[u8],
    new_in_worktree: bool,
) -> Result<Counted> {
    let old_text = repo.history().diff_text(old, None)?;
    let new_text = match old_text {
        Some(_) => repo
            .history()
            .diff_text(new, new_in_worktree.then_some(path))?,
        None => None,
    };
    Ok(match (old_text, new_text) {
        (Some(old), Some(new)) => {
            let diff = similar::TextDiff::from_lines(&old, &new);
            let count = |tag| diff.iter_all_changes().filter(|ch| ch.tag() == tag).count();
            Counted::Lines {
                added: count(similar::ChangeTag::Insert),
                removed: count(similar::ChangeTag::Delete),
            }
        }
        _ => Counted::Bytes {
            before: old.map_or(0, |e| e.size),
            after: new.map_or(0, |e| e.size),
        },
    })
}

/// A rename as git names it: the part both paths share outside braces,
/// `dir/{old => new}/file`, or `old => new` when they share no folder.
fn renamed_name(from: &str, to: &str) -> String {
    let (a, b) = (from.as_bytes(), to.as_bytes());
    // The shared leading folders, up to and with their last slash.
    let mut prefix = 0;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            break;
        }
        if *x == b'/' {
            prefix = i + 1;
        }
    }
    // The shared trailing folders and file name, from a slash on; with a
    // shared prefix, its slash may be that one too.
    let floor = prefix.saturating_sub(usize::from(prefix > 0));
    let mut suffix = 0;
    let (mut i, mut j) = (a.len(), b.len());
    while i > floor && j > floor && a[i - 1] == b[j - 1] {
        i -= 1;
        j -= 1;
        if a[i] == b'/' {
            suffix = a.len() - i;
        }
    }
    let middle = |s: &str| {
        s.get(prefix..s.len().saturating_sub(suffix).max(prefix))
            .unwrap_or("")
            .to_string()
    };
    let (old_middle, new_middle) = (middle(from), middle(to));
    match prefix + suffix {
        0 => format!("{from} => {to}"),
        _ => format!(
            "{}{{{old_middle} => {new_middle}}}{}",
            &from[..prefix],
            &from[from.len() - suffix..]
        ),
    }
}

/// The width of a number written in decimal.
fn decimal_width(n: u64) -> usize {
    n.to_string().len()
}

/// At least one mark for any change: scaled as if the bar were a column
/// shorter, plus one.
fn scale_linear(it: usize, width: usize, max_change: usize) -> usize {
    match it {
        0 => 0,
        _ => 1 + it * width.saturating_sub(1) / max_change.max(1),
    }
}

fn write_files(out: &mut impl Write, files: &[FileStat], columns: usize) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let width_of = |s: &str| s.chars().count();
    let max_len = files.iter().map(|f| width_of(&f.name)).max().unwrap_or(0);
    let mut max_change = 0;
    let mut bin_width = 0;
    let mut number_width = 0;
    for f in files {
        match f.counted {
            Counted::Lines { added, removed } => max_change = max_change.max(added + removed),
            Counted::Bytes { before, after } => {
                bin_width = bin_width.max(14 + decimal_width(before) + decimal_width(after));
                // The counts line up with "Bin".
                number_width = 3;
            }
        }
    }
    number_width = number_width.max(decimal_width(max_change as u64));
    // The name takes what it needs unless the line would pass the width;
    // then the bar gets at most 3/8 of it (at least 6 marks) and the name
    // what is left.
    let width = columns.max(16 + 6 + number_width);
    let mut graph_width = match max_change + 4 > bin_width {
        true => max_change,
        false => bin_width - 4,
    };
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        let most = (width * 3 / 8).saturating_sub(number_width + 6);
        if graph_width > most {
            graph_width = most.max(6);
        }
        let left = width.saturating_sub(number_width + 6 + graph_width);
        if name_width > left {
            name_width = left;
        } else {
            graph_width = width.saturating_sub(number_width + 6 + name_width);
        }
    }
    let (mut insertions, mut deletions) = (0, 0);
    for f in files {
        // A name too long loses its start, shown as `...`, and keeps what
        // follows a slash where it can.
        let mut name = f.name.as_str();
        let mut prefix = "";
        let mut len = name_width;
        if name_width < width_of(name) {
            prefix = "...";
            len = len.saturating_sub(3);
            let drop = width_of(name).saturating_sub(len);
            name = name
                .char_indices()
                .nth(drop)
                .map_or("", |(at, _)| &name[at..]);
            if let Some(slash) = name.find('/') {
                name = &name[slash..];
            }
        }
        let padding = len.saturating_sub(width_of(name));
        match f.counted {
            Counted::Bytes { before, after } => {
                write!(
                    out,
                    " {prefix}{name}{:padding$} | {:>number_width$}",
                    "", "Bin"
                )?;
                if before == 0 && after == 0 {
                    writeln!(out)?;
                    continue;
                }
                writeln!(
                    out,
                    " {} -> {} bytes",
                    paint(Style::Removed, &before.to_string()),
                    paint(Style::Added, &after.to_string())
                )?;
            }
            Counted::Lines { added, removed } => {
                insertions += added;
                deletions += removed;
                let (mut plus, mut minus) = (added, removed);
                if graph_width <= max_change {
                    let mut total = scale_linear(added + removed, graph_width, max_change);
                    if total < 2 && added > 0 && removed > 0 {
                        // Both kinds need a mark each.
                        total = 2;
                    }
                    if added < removed {
                        plus = scale_linear(added, graph_width, max_change);
                        minus = total - plus;
                    } else {
                        minus = scale_linear(removed, graph_width, max_change);
                        plus = total - minus;
                    }
                }
                let changed = added + removed;
                writeln!(
                    out,
                    " {prefix}{name}{:padding$} | {changed:>number_width$}{}{}{}",
                    "",
                    if changed > 0 { " " } else { "" },
                    paint(Style::Added, &"+".repeat(plus)),
                    paint(Style::Removed, &"-".repeat(minus)),
                )?;
            }
        }
    }
    writeln!(out, "{}", summary(files.len(), insertions, deletions))?;
    Ok(())
}

/// git's last line: the files, then the insertions unless there are only
/// deletions, and the deletions unless there are only insertions.
fn summary(files: usize, insertions: usize, deletions: usize) -> String {
    let plural = |n: usize, one: &str, many: &str| match n {
        1 => format!("{n} {one}"),
        _ => format!("{n} {many}"),
    };
    let mut line = format!(" {} changed", plural(files, "file", "files"));
    if insertions > 0 || deletions == 0 {
        line.push_str(&format!(
            ", {}",
            plural(insertions, "insertion(+)", "insertions(+)")
        ));
    }
    if deletions > 0 || insertions == 0 {
        line.push_str(&format!(
            ", {}",
            plural(deletions, "deletion(-)", "deletions(-)")
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_shares_its_folders_outside_the_braces() {
        assert_eq!(renamed_name("a.txt", "b.txt"), "a.txt => b.txt");
        assert_eq!(renamed_name("d/a.txt", "d/b.txt"), "d/{a.txt => b.txt}");
        assert_eq!(renamed_name("x/f", "y/f"), "{x => y}/f");
        assert_eq!(renamed_name("d/x/f", "d/y/f"), "d/{x => y}/f");
        assert_eq!(renamed_name("d/f", "d/e/f"), "d/{ => e}/f");
    }

    #[test]
    fn the_summary_leaves_out_what_git_leaves_out() {
        assert_eq!(summary(1, 1, 0), " 1 file changed, 1 insertion(+)");
        assert_eq!(summary(2, 0, 3), " 2 files changed, 3 deletions(-)");
        assert_eq!(
            summary(3, 10, 2),
            " 3 files changed, 10 insertions(+), 2 deletions(-)"
        );
        assert_eq!(
            summary(1, 0, 0),
            " 1 file changed, 0 insertions(+), 0 deletions(-)"
        );
    }
}
