//! `dmv tokens`: the login tokens of `dmv serve`, kept as hashes in a
//! tokens file (the user's own by default), without editing TOML.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use dmv_server::{NewToken, TokenAccess, TokensFile};

use crate::repo_args::printable;

#[derive(Args)]
#[command(after_help = "\
The file keeps only a hash of each token: a token is shown once, by `add`. `dmv serve`
without --config reads your file ($XDG_CONFIG_HOME/dmv/server-tokens.toml, else
~/.config/dmv/server-tokens.toml); a server's TOML takes one with tokens_file = \"FILE\".
A running server sees tokens added and revoked at its next request.")]
pub struct TokensArgs {
    /// The tokens file (default: your own, server-tokens.toml in your DMV config folder).
    #[arg(long, value_name = "FILE", global = true)]
    file: Option<PathBuf>,
    #[command(subcommand)]
    action: TokensAction,
}

#[derive(Subcommand)]
enum TokensAction {
    /// List the tokens (never their secrets): id, access, user, name, email, when made, paths granted.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Make a token and print it, once, alone on standard output.
    Add {
        /// Whose it is: the name locks are held under.
        #[arg(long)]
        user: String,
        /// The person's full name, the author of what they upload from a browser.
        #[arg(long)]
        name: Option<String>,
        /// The person's email.
        #[arg(long)]
        email: Option<String>,
        /// read (clone, fetch, browse), write (push, lock, upload too) or admin (break locks too).
        #[arg(long, value_name = "read|write|admin", value_parser = parse_access)]
        access: TokenAccess,
        /// A path pattern the token may change (`art/**`; .dmvattributes syntax), again for
        /// more; without one, every path.
        #[arg(long, value_name = "PATTERN")]
        write: Vec<String>,
        /// A group of the server's `[groups]` the holder is in (its paths are granted too),
        /// again for more.
        #[arg(long, value_name = "NAME")]
        group: Vec<String>,
    },
    /// Remove a token (by the id `list` shows); a running server refuses it from its next request.
    Revoke {
        /// The token's id.
        id: String,
    },
}

fn parse_access(word: &str) -> Result<TokenAccess, String> {
    TokenAccess::parse(word).ok_or_else(|| format!("{word:?}: say read, write or admin"))
}

pub fn tokens(a: TokensArgs) -> Result<u8> {
    let path = match a.file {
        Some(file) => file,
        None => match TokensFile::default_path() {
            Some(path) => path,
            None => {
                bail!("no home folder (HOME or XDG_CONFIG_HOME) to keep tokens in: give --file")
            }
        },
    };
    match a.action {
        TokensAction::List { json } => {
            let file = TokensFile::read(&path)?;
            if json {
                let list: Vec<serde_json::Value> = file
                    .tokens
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "id": t.id,
                            "access": t.access.as_str(),
                            "user": t.user,
                            "name": t.name,
                            "email": t.email,
                            "write": t.write,
                            "groups": t.groups,
                            "created": t.created,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(0);
            }
            if file.tokens.is_empty() {
                eprintln!("no tokens in {}", path.display());
            }
            for t in &file.tokens {
                let person = match (&t.name, &t.email) {
                    (Some(n), Some(e)) => format!("  {} <{}>", printable(n), printable(e)),
                    (Some(n), None) => format!("  {}", printable(n)),
                    (None, Some(e)) => format!("  <{}>", printable(e)),
                    (None, None) => String::new(),
                };
                let write = match &t.write {
                    Some(patterns) => format!("  write {}", printable(&patterns.join(", "))),
                    None => String::new(),
                };
                let groups = match t.groups.is_empty() {
                    true => String::new(),
                    false => format!("  groups {}", printable(&t.groups.join(", "))),
                };
                println!(
                    "{}  {:<5}  {}  {}{person}{write}{groups}",
                    t.id,
                    t.access.as_str(),
                    dmv_repo::utc_time(t.created.min(i64::MAX as u64) as i64),
                    printable(&t.user)
                );
            }
            Ok(0)
        }
        TokensAction::Add {
            user,
            name,
            email,
            access,
            write,
            group,
        } => {
            let (token, secret) = TokensFile::add(
                &path,
                &NewToken {
                    user,
                    name,
                    email,
                    access,
                    write: (!write.is_empty()).then_some(write),
                    groups: group,
                },
            )?;
            eprintln!(
                "added token {} ({}) for {} to {}; it is shown only now:",
                token.id,
                token.access.as_str(),
                printable(&token.user),
                path.display()
            );
            println!("{secret}");
            Ok(0)
        }
        TokensAction::Revoke { id } => match TokensFile::revoke(&path, &id)? {
            Some(t) => {
                eprintln!(
                    "revoked token {} ({}) of {}",
                    t.id,
                    t.access.as_str(),
                    printable(&t.user)
                );
                Ok(0)
            }
            None => bail!(
                "no token {} in {} (`dmv tokens list` shows their ids)",
                printable(&id),
                path.display()
            ),
        },
    }
}
