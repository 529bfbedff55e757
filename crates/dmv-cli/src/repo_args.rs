//! What every command needs: the repository it runs in, and its path arguments.

use std::path::PathBuf;

/// Opens the repository containing the current directory.
pub fn open_repo() -> anyhow::Result<dmv_repo::Repository> {
    let mut repo = dmv_repo::Repository::discover(&std::env::current_dir()?)?;
    // A person's commits carry their name, as git insists.
    repo.refuse_unknown_identity();
    Ok(repo)
}

/// Opens the repository for a command that works in its working tree,
/// refusing a bare repository before the command does anything.
pub fn open_worktree() -> anyhow::Result<dmv_repo::Repository> {
    let repo = open_repo()?;
    repo.require_worktree()?;
    Ok(repo)
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

/// This program again with `args` in `dir`, detached: no terminal input,
/// what it prints on stderr appended to the log at `log_path`, in a process
/// group of its own (a Ctrl-C in the terminal that started it does not stop
/// it). For `--background`.
pub fn spawn_detached(
    args: &[std::ffi::OsString],
    dir: &std::path::Path,
    log_path: &std::path::Path,
) -> anyhow::Result<std::process::Child> {
    use anyhow::Context;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // Windows: a process group of its own, which a Ctrl-C in the console does not reach.
    #[cfg(windows)]
    std::os::windows::process::CommandExt::creation_flags(&mut command, 0x0000_0200);
    Ok(command.spawn()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(super::printable("plain: élan"), "plain: élan");
        assert_eq!(
            super::printable("a\x1b]0;pwned\x07b\u{9b}2J\n"),
            "a\\x1b]0;pwned\\x07b\\u{9b}2J\\x0a"
        );
    }
}
