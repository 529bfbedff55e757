//! What every command needs: the repository it runs in, and its path arguments.

use std::path::PathBuf;

/// Opens the repository containing the current directory.
pub fn open_repo() -> anyhow::Result<dmv_repo::Repository> {
    let cwd = std::env::current_dir()?;
    Ok(dmv_repo::Repository::discover(&cwd)?)
}

/// Command-line paths as repository-relative byte paths.
pub fn repo_paths(repo: &dmv_repo::Repository, paths: &[PathBuf]) -> anyhow::Result<Vec<Vec<u8>>> {
    let cwd = std::env::current_dir()?;
    paths.iter().map(|p| Ok(repo.repo_path(&cwd, p)?)).collect()
}

pub fn show_path(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}
