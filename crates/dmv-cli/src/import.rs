//! `dmv import git PATH`: brings a Git repository's history along.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::progress::Bar;
use crate::repo_args::open_repo;

#[derive(Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    from: ImportFrom,
}

#[derive(Subcommand)]
enum ImportFrom {
    /// Every branch and tag of a Git repository, commits with their authors, dates and
    /// messages, Git LFS files as their content when .git/lfs/objects has it. Run again,
    /// it converts only new commits.
    Git {
        /// The Git repository (its working tree, its .git folder, or a bare repository).
        path: PathBuf,
    },
}

pub fn import(a: ImportArgs) -> Result<u8> {
    let ImportFrom::Git { path } = a.from;
    let repo = open_repo()?;
    let p = Bar::new("importing commits");
    let done = dmv_gitimport::import_git(&repo, &path, &p)?;
    drop(p);
    println!(
        "Imported {} commits ({} imported before), {} branches, {} tags",
        done.commits,
        done.already,
        done.branches.len(),
        done.tags.len()
    );
    if done.lfs_content + done.lfs_pointers > 0 {
        println!("Git LFS: {} files as their content, {} as their pointer (content not in .git/lfs/objects)", done.lfs_content, done.lfs_pointers);
    }
    if done.submodules > 0 {
        println!(
            "{} submodule entries left out (a submodule is another repository)",
            done.submodules
        );
    }
    for (r, why) in &done.left_alone {
        eprintln!("warning: {r} left as it is: {why}");
    }
    if let Some(b) = &done.checked_out {
        println!("Checked out {b}");
    }
    Ok(0)
}
