//! What every command needs: the repository it runs in, and its path arguments.

use std::cell::RefCell;
use std::path::PathBuf;

thread_local! {
    /// The repository [`check_worktree`] opened, for the command to take
    /// rather than open it again: an open reads the requirements, the
    /// config, the pack indexes and the ref tables, a tenth of a small commit.
    static OPENED: RefCell<Option<dmv_repo::Repository>> = const { RefCell::new(None) };
}

/// Opens the repository containing the current directory.
pub fn open_repo() -> anyhow::Result<dmv_repo::Repository> {
    if let Some(repo) = OPENED.with(|opened| opened.borrow_mut().take()) {
        return Ok(repo);
    }
    let cwd = std::env::current_dir()?;
    Ok(dmv_repo::Repository::discover(&cwd)?)
}

/// Why a command that works in the working tree cannot run here (a bare
/// repository), if it cannot; the repository is kept for the command.
/// Nothing, too, when there is no repository: the command says so itself.
pub fn check_worktree() -> Option<dmv_repo::RepoError> {
    let repo = open_repo().ok()?;
    match repo.require_worktree() {
        Ok(()) => {
            OPENED.with(|opened| *opened.borrow_mut() = Some(repo));
            None
        }
        Err(e) => Some(e),
    }
}

/// Command-line paths as repository-relative byte paths.
pub fn repo_paths(repo: &dmv_repo::Repository, paths: &[PathBuf]) -> anyhow::Result<Vec<Vec<u8>>> {
    let cwd = std::env::current_dir()?;
    paths.iter().map(|p| Ok(repo.repo_path(&cwd, p)?)).collect()
}

pub fn show_path(p: &[u8]) -> String {
    printable(&String::from_utf8_lossy(p))
}

/// Text from elsewhere (a peer's error, a replica's or a lock holder's
/// name, a committed file name) as it may reach a terminal: control
/// characters, which could retitle the window or rewrite what is shown,
/// appear escaped (`\x1b`, `\u{9b}`).
pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c {
            c if !c.is_control() => c.to_string(),
            c if (c as u32) < 0x80 => format!("\\x{:02x}", c as u32),
            c => format!("\\u{{{:x}}}", c as u32),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(super::printable("plain: élan"), "plain: élan");
        assert_eq!(super::printable("a\x1b]0;pwned\x07b\u{9b}2J\n"), "a\\x1b]0;pwned\\x07b\\u{9b}2J\\x0a");
    }
}
