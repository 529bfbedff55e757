//! `dmv keys`: this device's key, and the keys that open an encrypted
//! bucket remote (`dmv remote add NAME s3://… --encrypt`).

use std::io::{BufRead, IsTerminal};

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use dmv_sync::{KeyEntry, KeysChange, NamedRemote};
use zeroize::Zeroizing;

use crate::repo_args::open_repo;

#[derive(Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    action: KeysAction,
}

#[derive(Subcommand)]
enum KeysAction {
    /// Print this device's public key (made at first use), for another
    /// device to add with `dmv keys add --recipient`.
    Device,
    /// List the keys that open an encrypted remote.
    List {
        /// The remote (default: the branch's upstream remote, else origin, else the only one).
        #[arg(long)]
        remote: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Let another device's key, or a passphrase, open an encrypted remote.
    Add {
        /// The device's public key (dmvpub1…, from `dmv keys device` there).
        #[arg(long, value_name = "PUBKEY", required_unless_present = "passphrase")]
        recipient: Option<String>,
        /// A passphrase, typed twice (or the first line of standard input).
        #[arg(long, conflicts_with = "recipient")]
        passphrase: bool,
        #[arg(long)]
        remote: Option<String>,
    },
    /// Seal what is written from now on with a new key, wrapped again for
    /// every device and for the passphrase copies DMV_PASSPHRASE opens (the
    /// others are removed). After `remove`, this keeps a removed device
    /// from reading what comes next.
    Rotate {
        /// Then seal again with the new key everything stored before
        /// (what `dmv keys rewrite` does), so that a removed key reads
        /// nothing there at all.
        #[arg(long)]
        rewrite: bool,
        #[arg(long)]
        remote: Option<String>,
    },
    /// Seal again with the newest key everything an encrypted remote
    /// stores sealed with an older one: finishes a `rotate --rewrite` cut
    /// short, and may be run at any time (what is done is passed over).
    Rewrite {
        #[arg(long)]
        remote: Option<String>,
    },
    /// Stop a key from opening an encrypted remote (by its name or public
    /// key). Data sealed before stays readable to whoever kept that key;
    /// `rotate` after it keeps them from what comes next.
    Remove {
        /// The key's name (see `dmv keys list`) or its device's public key.
        id: String,
        #[arg(long)]
        remote: Option<String>,
    },
}

pub fn keys(a: KeysArgs) -> Result<u8> {
    match a.action {
        KeysAction::Device => {
            let Some(identity) = dmv_sync::device_key(true)? else {
                bail!("no home folder (HOME or XDG_CONFIG_HOME) to keep this device's key in");
            };
            println!("{}", identity.recipient().to_text());
        }
        KeysAction::List { remote, json } => {
            let repo = open_repo()?;
            let remote = find(&repo, remote.as_deref())?;
            let keys = dmv_sync::list_keys(&repo, &remote)?;
            if json {
                let list: Vec<serde_json::Value> = keys.iter().map(key_json).collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for k in &keys {
                    println!("{}\t{}", k.name, describe(k));
                }
            }
        }
        KeysAction::Add {
            recipient,
            passphrase,
            remote,
        } => {
            let repo = open_repo()?;
            let remote = find(&repo, remote.as_deref())?;
            let change = match (recipient, passphrase) {
                (Some(r), _) => KeysChange::AddRecipient(dmv_sync::Recipient::parse(r.trim())?),
                (None, _) => KeysChange::AddPassphrase(read_passphrase()?),
            };
            let added = dmv_sync::change_keys(&repo, &remote, change)?;
            eprintln!("Added key {} ({})", added.name, describe(&added));
        }
        KeysAction::Rotate { rewrite, remote } => {
            let repo = open_repo()?;
            let remote = find(&repo, remote.as_deref())?;
            let rotated = dmv_sync::rotate_key(&repo, &remote)?;
            let copies = rotated.rewrapped.len();
            eprintln!(
                "Rotated to key epoch {}: {copies} {} wrapped again",
                rotated.epoch,
                if copies == 1 { "key" } else { "keys" }
            );
            for k in &rotated.removed {
                eprintln!("Removed key {} (its passphrase was not given)", k.name);
            }
            if rewrite {
                reseal(&repo, &remote)?;
            }
        }
        KeysAction::Rewrite { remote } => {
            let repo = open_repo()?;
            let remote = find(&repo, remote.as_deref())?;
            reseal(&repo, &remote)?;
        }
        KeysAction::Remove { id, remote } => {
            let repo = open_repo()?;
            let remote = find(&repo, remote.as_deref())?;
            let removed = dmv_sync::change_keys(&repo, &remote, KeysChange::Remove(id))?;
            eprintln!("Removed key {} ({})", removed.name, describe(&removed));
        }
    }
    Ok(0)
}

/// Seals again what the remote stores under older keys, with a bar.
fn reseal(repo: &dmv_repo::Repository, remote: &NamedRemote) -> Result<()> {
    let bar = crate::progress::Bar::new("Sealing");
    let done = dmv_sync::reseal_remote(repo, remote, &mut |done, total| bar.update(done, total))
        .map_err(|e| {
            anyhow::anyhow!(
                "{e} (what was sealed again stays so: `dmv keys rewrite` does the rest)"
            )
        })?;
    bar.finish();
    let objects = |n: u64| if n == 1 { "object" } else { "objects" };
    let (resealed, already) = (done.resealed, done.objects - done.resealed);
    eprintln!(
        "Sealed {resealed} {} again with the newest key ({} bytes); {already} already {}",
        objects(resealed),
        done.bytes,
        if already == 1 { "was" } else { "were" }
    );
    Ok(())
}

fn find(repo: &dmv_repo::Repository, remote: Option<&str>) -> Result<NamedRemote> {
    Ok(match remote {
        Some(name) => dmv_sync::find_remote(repo, name)?,
        None => dmv_sync::default_remote(repo, "keys")?,
    })
}

fn describe(k: &KeyEntry) -> String {
    match &k.device {
        Some(public) => format!("device {public}"),
        None => "passphrase".into(),
    }
}

fn key_json(k: &KeyEntry) -> serde_json::Value {
    serde_json::json!({ "name": k.name, "device": k.device })
}

/// One line of standard input, without its line end.
fn line() -> Result<Zeroizing<String>> {
    let mut line = Zeroizing::new(String::new());
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(Zeroizing::new(
        line.trim_end_matches(['\n', '\r']).to_string(),
    ))
}

/// Whether a passphrase may be asked for: someone is at the terminal, and
/// DMV_PASSPHRASE gave none (one it gave that failed is not asked again).
pub fn can_ask_passphrase() -> bool {
    std::io::stdin().is_terminal() && std::env::var_os("DMV_PASSPHRASE").is_none()
}

/// A passphrase typed at the terminal without echo, after `prompt`.
pub fn ask_passphrase(prompt: &str) -> Result<Zeroizing<String>> {
    eprint!("{prompt}");
    dmv_os::without_echo(line)
}

/// A new passphrase: asked twice without echo on a terminal, else the
/// first line of standard input; not empty.
fn read_passphrase() -> Result<Zeroizing<String>> {
    let passphrase = if std::io::stdin().is_terminal() {
        eprint!("New passphrase: ");
        let first = dmv_os::without_echo(line)?;
        eprint!("The same again: ");
        if *dmv_os::without_echo(line)? != *first {
            bail!("the two passphrases differ; nothing was added");
        }
        first
    } else {
        line()?
    };
    if passphrase.is_empty() {
        bail!("no passphrase: type one, or give it on the first line of standard input");
    }
    Ok(passphrase)
}
