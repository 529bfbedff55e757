//! Shell completion: clap's scripts for bash, zsh and fish, taught where a
//! command takes a branch, tag, remote-tracking branch or remote name, which
//! they then ask `dmv __complete refs` for (as git's completion offers them).

use std::io::Write as _;

use clap::ValueHint;
use clap_complete::Shell;

/// What a positional argument is completed with.
#[derive(Clone, Copy, PartialEq)]
enum Completes {
    /// Branch, tag and remote names only (a revision, a remote).
    Names,
    /// Those names or paths (the argument may be either, as `diff`'s).
    NamesOrPaths,
}

use Completes::{Names, NamesOrPaths};

/// The positional arguments that name revisions or remotes: (the command's
/// path, the argument's id, what it completes to).
const NAMED_ARGS: &[(&[&str], &str, Completes)] = &[
    (&["reset"], "rev", Names),
    (&["revert"], "rev", Names),
    (&["archive"], "rev", Names),
    (&["branch"], "name", Names),
    (&["branch"], "start", Names),
    (&["branch"], "more", Names),
    (&["switch"], "branch", Names),
    (&["switch"], "start", Names),
    (&["checkout"], "target", Names),
    (&["tag"], "name", Names),
    (&["tag"], "rev", Names),
    (&["merge"], "rev", Names),
    (&["cherry-pick"], "rev", Names),
    (&["rebase"], "upstream", Names),
    (&["bisect", "start"], "revs", Names),
    (&["bisect", "good"], "revs", Names),
    (&["bisect", "bad"], "rev", Names),
    (&["bisect", "skip"], "revs", Names),
    (&["bisect", "reset"], "rev", Names),
    (&["log"], "rev", Names),
    (&["show"], "rev", Names),
    (&["diff"], "revs", NamesOrPaths),
    (&["cat"], "spec", Names),
    (&["ls-tree"], "spec", Names),
    (&["blame"], "args", NamesOrPaths),
    (&["describe"], "rev", Names),
    (&["shortlog"], "revs", Names),
    (&["rev-list"], "revs", Names),
    (&["rev-parse"], "revs", Names),
    (&["reflog"], "REF", Names),
    (&["remote", "remove"], "name", Names),
    (&["remote", "set-url"], "name", Names),
    (&["fetch"], "remote", Names),
    (&["pull"], "remote", Names),
    (&["pull"], "branch", Names),
    (&["push"], "remote", Names),
    (&["push"], "branches", Names),
    (&["sync"], "remote", Names),
    (&["mount"], "rev", Names),
    (&["ls"], "args", NamesOrPaths),
];

/// `dmv completions SHELL`: clap's script, with the names added for bash,
/// zsh and fish.
pub fn print_script(shell: Shell, mut cli: clap::Command) -> anyhow::Result<u8> {
    cli.build();
    let mut script = Vec::new();
    match shell {
        Shell::Zsh => {
            mark_named_args(&mut cli)?;
            clap_complete::generate(shell, &mut cli, "dmv", &mut script);
            script = zsh_with_names(&String::from_utf8(script)?)?.into_bytes();
        }
        Shell::Fish => {
            clap_complete::generate(shell, &mut cli, "dmv", &mut script);
            script.extend_from_slice(fish_names(&cli).as_bytes());
        }
        Shell::Bash => {
            clap_complete::generate(shell, &mut cli, "dmv", &mut script);
            script.extend_from_slice(bash_names().as_bytes());
        }
        _ => clap_complete::generate(shell, &mut cli, "dmv", &mut script),
    }
    // Written here rather than by clap_complete, which panics when the
    // reader has gone (`dmv completions zsh | head`).
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(0)
}

/// The top-level commands some of whose arguments are names.
fn commands_taking_names() -> Vec<&'static str> {
    let mut commands: Vec<&str> = NAMED_ARGS.iter().map(|(path, _, _)| path[0]).collect();
    commands.dedup();
    commands
}

/// Appended to clap's bash script: where a command takes a revision or a
/// remote, the names `dmv __complete refs` lists are offered too.
fn bash_names() -> String {
    format!(
        r#"
_dmv_with_refs() {{
    _dmv "$@"
    local cur="${{COMP_WORDS[COMP_CWORD]}}" i cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -C) ((i++)) ;;
            -*) ;;
            *) cmd="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    case "$cur" in -*) return ;; esac
    case "$cmd" in
        {})
            local names
            names="$(dmv __complete refs 2>/dev/null)"
            COMPREPLY+=($(compgen -W "$names" -- "$cur"))
            ;;
    esac
}}
complete -F _dmv_with_refs -o bashdefault -o default dmv
"#,
        commands_taking_names().join("|")
    )
}

// clap's zsh script has no hook for a completer of one's own, only
// `ValueHint`s, each written as a zsh function: the named arguments are
// marked with two hints no dmv argument otherwise has, and those functions'
// names then replaced by dmv's.
const ZSH_NAMES_MARK: (ValueHint, &str) = (ValueHint::Hostname, ":_hosts'");
const ZSH_NAMES_OR_PATHS_MARK: (ValueHint, &str) = (ValueHint::Username, ":_users'");

fn mark_named_args(cli: &mut clap::Command) -> anyhow::Result<()> {
    fn uses_a_mark(cmd: &clap::Command) -> bool {
        cmd.get_arguments()
            .any(|a| [ZSH_NAMES_MARK.0, ZSH_NAMES_OR_PATHS_MARK.0].contains(&a.get_value_hint()))
            || cmd.get_subcommands().any(uses_a_mark)
    }
    if uses_a_mark(cli) {
        anyhow::bail!(
            "an argument already has the value hint the zsh script's names are marked with"
        );
    }
    for (path, id, completes) in NAMED_ARGS {
        let mut cmd = &mut *cli;
        for name in *path {
            cmd = cmd
                .get_subcommands_mut()
                .find(|c| c.get_name() == *name)
                .ok_or_else(|| anyhow::anyhow!("completion: no command {}", path.join(" ")))?;
        }
        if !cmd.get_positionals().any(|a| a.get_id() == id) {
            anyhow::bail!("completion: `{}` has no argument {id}", path.join(" "));
        }
        let hint = match completes {
            Names => ZSH_NAMES_MARK.0,
            NamesOrPaths => ZSH_NAMES_OR_PATHS_MARK.0,
        };
        *cmd = std::mem::take(cmd).mut_args(|a| {
            if a.get_id() == id {
                a.value_hint(hint)
            } else {
                a
            }
        });
    }
    Ok(())
}

/// Defined before the script's closing lines, which call `_dmv` when the
/// file is autoloaded from $fpath (what is defined after would not be yet).
const ZSH_FUNCTIONS: &str = r#"(( $+functions[_dmv_names] )) ||
_dmv_names() {
    local -a names
    names=(${(f)"$(_call_program names dmv __complete refs 2>/dev/null)"})
    _wanted dmv-names expl 'branch, tag or remote' compadd -a names
}
(( $+functions[_dmv_names_or_files] )) ||
_dmv_names_or_files() {
    _alternative 'dmv-names:branch, tag or remote:_dmv_names' 'files:file:_files'
}

"#;

fn zsh_with_names(script: &str) -> anyhow::Result<String> {
    let marked = |mark: &str| script.matches(mark).count();
    let expected = |kind: Completes| NAMED_ARGS.iter().filter(|a| a.2 == kind).count();
    if marked(ZSH_NAMES_MARK.1) != expected(Names)
        || marked(ZSH_NAMES_OR_PATHS_MARK.1) != expected(NamesOrPaths)
    {
        anyhow::bail!("completion: clap's zsh script no longer writes hints as expected");
    }
    let closing = "if [ \"$funcstack[1]\" = \"_dmv\" ]; then";
    let Some(end) = script.rfind(closing) else {
        anyhow::bail!("completion: clap's zsh script no longer ends as expected");
    };
    let (body, tail) = script.split_at(end);
    Ok(format!("{body}{ZSH_FUNCTIONS}{tail}")
        .replace(ZSH_NAMES_MARK.1, ":_dmv_names'")
        .replace(ZSH_NAMES_OR_PATHS_MARK.1, ":_dmv_names_or_files'"))
}

/// Appended to clap's fish script, which completes no positional argument:
/// the names where a command takes them; files only where it takes paths.
fn fish_names(cli: &clap::Command) -> String {
    let mut out =
        String::from("\nfunction __fish_dmv_names\n    dmv __complete refs 2>/dev/null\nend\n");
    let mut paths: Vec<&[&str]> = NAMED_ARGS.iter().map(|a| a.0).collect();
    paths.dedup();
    for path in paths {
        let Some(cmd) = path.iter().try_fold(cli, |c, name| c.find_subcommand(name)) else {
            continue;
        };
        let takes_paths = NAMED_ARGS
            .iter()
            .any(|a| a.0 == path && a.2 == NamesOrPaths)
            || cmd.get_positionals().any(|a| {
                matches!(
                    a.get_value_hint(),
                    ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
                )
            });
        let mut condition = format!("__fish_dmv_using_subcommand {}", path[0]);
        if path.len() > 1 {
            let names: Vec<&str> = std::iter::once(cmd.get_name())
                .chain(cmd.get_all_aliases())
                .collect();
            condition.push_str(&format!(
                "; and __fish_seen_subcommand_from {}",
                names.join(" ")
            ));
        }
        out.push_str(&format!(
            "complete -c dmv -n \"{}\"{} -a \"(__fish_dmv_names)\"\n",
            condition,
            if takes_paths { "" } else { " -f" },
        ));
    }
    out
}

/// `__complete refs`: the branch, tag, remote-tracking branch and remote
/// names of the repository here, one a line (nothing outside one).
pub fn complete_names(what: &str) -> anyhow::Result<u8> {
    if what != "refs" {
        anyhow::bail!("__complete knows only `refs`");
    }
    let Ok(repo) = dmv_repo::Repository::discover(std::path::Path::new(".")) else {
        return Ok(0);
    };
    use dmv_repo::ref_names::{BRANCHES, REMOTE_BRANCHES, TAGS};
    let mut out = String::new();
    for prefix in [BRANCHES, TAGS, REMOTE_BRANCHES] {
        for (name, _) in repo.refs.list(prefix)? {
            out.push_str(name.strip_prefix(prefix).unwrap_or(&name));
            out.push('\n');
        }
    }
    for remote in repo.config.remotes.keys() {
        out.push_str(remote);
        out.push('\n');
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(0)
}
