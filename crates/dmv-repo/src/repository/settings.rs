//! What a person sets with `dmv config`, by git's key names: in the
//! repository's `.dmv/config`, or for all of their repositories in a global
//! file (`$XDG_CONFIG_HOME/dmv/config`, else `~/.config/dmv/config`). The
//! repository's setting wins over the global one.

use crate::error::{IoContext, RepoError, RepoResult};
use crate::line_merge::ConflictStyle;
use std::collections::BTreeMap;

use crate::repository::config::{alias_name, global_path, Config, GlobalSettings};
use crate::repository::repo::Repository;

/// Keys `dmv config` knows, with `alias.NAME`; the first eight may also be
/// global, and the last is global only.
pub const KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "merge.tool",
    "merge.conflictStyle",
    "remote.timeout",
    "color.ui",
    "core.pager",
    "core.editor",
    "replica.name",
    "drop.numcopies",
    "drop.allowed",
    "lock.releaseOnPush",
    "review.protect",
    "mount.cacheSize",
    "init.defaultBranch",
];
const GLOBAL_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "merge.tool",
    "merge.conflictStyle",
    "remote.timeout",
    "color.ui",
    "core.pager",
    "core.editor",
    "init.defaultBranch",
];

/// A known key as spelled in [`KEYS`]: like git's, keys are case-insensitive.
pub fn canonical_key(key: &str) -> &str {
    KEYS.iter()
        .find(|k| k.eq_ignore_ascii_case(key))
        .copied()
        .unwrap_or(key)
}

/// `merge.conflictStyle` must name a style git knows.
fn conflict_style(key: &str, value: Option<&str>) -> RepoResult<Option<String>> {
    match value {
        Some(v) if ConflictStyle::parse(v).is_none() => Err(RepoError::BadSetting {
            key: key.into(),
            detail: format!("'{v}' is not merge or diff3"),
        }),
        v => Ok(v.map(str::to_string)),
    }
}

/// `color.ui` takes git's values.
fn colour_setting(key: &str, value: Option<&str>) -> RepoResult<Option<String>> {
    const KNOWN: &[&str] = &[
        "auto", "always", "never", "true", "false", "yes", "no", "on", "off", "1", "0",
    ];
    match value {
        Some(v) if !KNOWN.iter().any(|k| k.eq_ignore_ascii_case(v)) => Err(RepoError::BadSetting {
            key: key.into(),
            detail: format!("'{v}' is not auto, always or never"),
        }),
        v => Ok(v.map(str::to_string)),
    }
}

impl GlobalSettings {
    fn put(&mut self, key: &str, value: Option<&str>) -> RepoResult<()> {
        let text = || value.map(str::to_string);
        match key {
            "user.name" => self.user_name = text(),
            "user.email" => self.user_email = text(),
            "merge.tool" => self.merge_tool = text(),
            "merge.conflictStyle" => self.merge_conflict_style = conflict_style(key, value)?,
            "remote.timeout" => self.remote_timeout = value.map(|v| seconds(key, v)).transpose()?,
            "color.ui" => self.color_ui = colour_setting(key, value)?,
            "core.pager" => self.core_pager = text(),
            "core.editor" => self.core_editor = text(),
            key if key
                .get(..6)
                .is_some_and(|p| p.eq_ignore_ascii_case("alias.")) =>
            {
                put_alias(&mut self.aliases, key, value)?;
            }
            "init.defaultBranch" => {
                if let Some(v) = value {
                    crate::repository::refs::validate_ref_name(&crate::ref_names::branch_ref(v))
                        .map_err(|e| RepoError::BadSetting {
                            key: key.into(),
                            detail: format!("'{v}' cannot name a branch: {e}"),
                        })?;
                }
                self.init_default_branch = text();
            }
            _ => return Err(unknown(key, GLOBAL_KEYS)),
        }
        Ok(())
    }

    /// Sets (or with None removes) a global setting, as one step against
    /// another `dmv config --global` at the same moment.
    pub fn set(key: &str, value: Option<&str>) -> RepoResult<()> {
        let key = canonical_key(key);
        let path = global_path().ok_or_else(|| RepoError::Scan {
            detail: "no home folder (HOME or XDG_CONFIG_HOME) for the global settings".into(),
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).at(dir)?;
        }
        let lock_path = path.with_extension("lock");
        let _lock = crate::atomic::hold_lock_file(&lock_path)?;
        let mut settings = GlobalSettings::load()?;
        settings.put(key, value)?;
        let text = serde_json::to_vec_pretty(&settings).map_err(|e| RepoError::Encode {
            what: "the global settings",
            detail: e.to_string(),
        })?;
        crate::atomic::write_atomic(&path, &text)
    }

    /// Every global setting that is set, by key.
    pub fn list(&self) -> Vec<(String, String)> {
        GLOBAL_KEYS
            .iter()
            .filter_map(|k| self.get(k).map(|v| (k.to_string(), v)))
            .chain(aliases_listed(&self.aliases))
            .collect()
    }
}

/// A wait in whole seconds, at least one.
fn seconds(key: &str, v: &str) -> RepoResult<u32> {
    v.parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| RepoError::BadSetting {
            key: key.into(),
            detail: format!("'{v}' is not a whole number of seconds, at least 1"),
        })
}

fn unknown(key: &str, known: &[&str]) -> RepoError {
    RepoError::UnknownSetting {
        key: key.to_string(),
        known: known.join(", "),
    }
}

/// A repository setting by key (None: not set).
pub fn repo_get(cfg: &Config, key: &str) -> Option<String> {
    match key {
        "user.name" => cfg.user_name.clone(),
        "user.email" => cfg.user_email.clone(),
        "merge.tool" => cfg.merge_tool.clone(),
        "merge.conflictStyle" => cfg.merge_conflict_style.clone(),
        "replica.name" => cfg.replica_name.clone(),
        "drop.numcopies" => cfg.numcopies.map(|n| n.to_string()),
        "drop.allowed" => cfg.drops_allowed.map(|b| b.to_string()),
        "lock.releaseOnPush" => cfg.lock_release_on_push.map(|b| b.to_string()),
        "review.protect" => (!cfg.protected_branches.is_empty()).then(|| {
            let rules: Vec<String> = cfg
                .protected_branches
                .iter()
                .map(|(branch, n)| format!("{branch}={n}"))
                .collect();
            rules.join(" ")
        }),
        "remote.timeout" => cfg.remote_timeout.map(|s| s.to_string()),
        "mount.cacheSize" => cfg.mount_cache_size.map(|s| s.to_string()),
        "color.ui" => cfg.color_ui.clone(),
        "core.pager" => cfg.core_pager.clone(),
        "core.editor" => cfg.core_editor.clone(),
        _ => alias_name(key).and_then(|n| cfg.aliases.get(&n.to_ascii_lowercase()).cloned()),
    }
}

/// Every alias as `alias.NAME` and its value.
fn aliases_listed(
    aliases: &BTreeMap<String, String>,
) -> impl Iterator<Item = (String, String)> + '_ {
    aliases
        .iter()
        .map(|(n, v)| (format!("alias.{n}"), v.clone()))
}

/// Values longer than this are refused: an alias is a command line.
pub const MAX_ALIAS_LEN: usize = 4096;

/// Sets (or with None removes) the alias a key `alias.NAME` names.
fn put_alias(
    aliases: &mut BTreeMap<String, String>,
    key: &str,
    value: Option<&str>,
) -> RepoResult<()> {
    let bad = |detail: String| RepoError::BadSetting {
        key: key.into(),
        detail,
    };
    let name = alias_name(key)
        .ok_or_else(|| bad("an alias is named with letters, digits and -, at most 64".into()))?
        .to_ascii_lowercase();
    match value {
        Some(v) if v.trim().is_empty() => return Err(bad("an alias needs a command".into())),
        Some(v) if v.len() > MAX_ALIAS_LEN => {
            return Err(bad(format!("an alias is at most {MAX_ALIAS_LEN} bytes")))
        }
        Some(v) => {
            aliases.insert(name, v.to_string());
        }
        None => {
            aliases.remove(&name);
        }
    }
    Ok(())
}

/// A setting of true or false.
/// Branches protected at once, at most.
pub const MAX_PROTECTED_BRANCHES: usize = 64;
/// Approvals a protected branch may ask for, at most.
pub const MAX_REQUIRED_APPROVALS: u32 = 64;

/// `review.protect`: `BRANCH=APPROVALS` pairs separated by spaces or
/// commas (`key` names the setting in a refusal).
pub fn protected_branches(key: &str, value: Option<&str>) -> RepoResult<BTreeMap<String, u32>> {
    let mut rules = BTreeMap::new();
    for pair in value
        .unwrap_or("")
        .split([' ', ','])
        .filter(|p| !p.is_empty())
    {
        let bad = |detail: String| RepoError::BadSetting {
            key: key.into(),
            detail,
        };
        let (branch, n) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("'{pair}' is not BRANCH=APPROVALS")))?;
        crate::repository::refs::validate_ref_name(&crate::ref_names::branch_ref(branch))
            .map_err(|_| bad(format!("'{branch}' is not a branch name")))?;
        let n = n
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_REQUIRED_APPROVALS).contains(n))
            .ok_or_else(|| {
                bad(format!(
                    "'{n}' is not a number of approvals from 1 to {MAX_REQUIRED_APPROVALS}"
                ))
            })?;
        rules.insert(branch.to_string(), n);
    }
    if rules.len() > MAX_PROTECTED_BRANCHES {
        return Err(RepoError::BadSetting {
            key: key.into(),
            detail: format!("at most {MAX_PROTECTED_BRANCHES} branches are protected"),
        });
    }
    Ok(rules)
}

fn yes_or_no(key: &str, value: Option<&str>) -> RepoResult<Option<bool>> {
    match value {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(v) => Err(RepoError::BadSetting {
            key: key.into(),
            detail: format!("'{v}' is not true or false"),
        }),
    }
}

/// A size in bytes: a whole number, with an optional unit (`K`, `M`, `G`,
/// `T`, each 1024 times the one before, as git's `core.bigFileThreshold`;
/// `KiB`, `MiB`… alike), at most 2^60.
fn bytes(key: &str, value: &str) -> RepoResult<u64> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => u32::MAX,
    };
    number
        .parse::<u64>()
        .ok()
        .filter(|_| shift != u32::MAX)
        .and_then(|n| n.checked_shl(shift).filter(|b| b >> shift == n))
        .filter(|b| *b <= 1 << 60)
        .ok_or_else(|| RepoError::BadSetting {
            key: key.into(),
            detail: format!(
                "'{value}' is not a size (a whole number of bytes, or with K, M, G or T)"
            ),
        })
}

fn repo_set(cfg: &mut Config, key: &str, value: Option<&str>) -> RepoResult<()> {
    let text = || value.map(str::to_string);
    match key {
        "user.name" => cfg.user_name = text(),
        "user.email" => cfg.user_email = text(),
        "merge.tool" => cfg.merge_tool = text(),
        "merge.conflictStyle" => cfg.merge_conflict_style = conflict_style(key, value)?,
        "replica.name" => cfg.replica_name = text(),
        "remote.timeout" => cfg.remote_timeout = value.map(|v| seconds(key, v)).transpose()?,
        "color.ui" => cfg.color_ui = colour_setting(key, value)?,
        "core.pager" => cfg.core_pager = text(),
        "core.editor" => cfg.core_editor = text(),
        key if key
            .get(..6)
            .is_some_and(|p| p.eq_ignore_ascii_case("alias.")) =>
        {
            put_alias(&mut cfg.aliases, key, value)?
        }
        "drop.numcopies" => {
            cfg.numcopies = match value {
                None => None,
                Some(v) => Some(v.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    RepoError::BadSetting {
                        key: key.into(),
                        detail: format!("'{v}' is not a whole number of at least 1"),
                    }
                })?),
            }
        }
        "drop.allowed" => cfg.drops_allowed = yes_or_no(key, value)?,
        "lock.releaseOnPush" => cfg.lock_release_on_push = yes_or_no(key, value)?,
        "review.protect" => cfg.protected_branches = protected_branches(key, value)?,
        "mount.cacheSize" => cfg.mount_cache_size = value.map(|v| bytes(key, v)).transpose()?,
        "init.defaultBranch" => {
            return Err(RepoError::BadSetting {
                key: key.into(),
                detail: "names the first branch of new repositories: set it with --global".into(),
            })
        }
        _ => return Err(unknown(key, KEYS)),
    }
    Ok(())
}

impl Repository {
    /// The value `dmv config KEY` shows: the repository's, else the global one.
    pub fn setting(&self, key: &str) -> RepoResult<Option<String>> {
        let key = canonical_key(key);
        if !KEYS.contains(&key) && alias_name(key).is_none() {
            return Err(unknown(key, KEYS));
        }
        Ok(match repo_get(&self.config, key) {
            Some(v) => Some(v),
            None => GlobalSettings::load()?.get(key),
        })
    }

    /// Sets (or with None removes) a setting of this repository.
    pub fn set_setting(&mut self, key: &str, value: Option<&str>) -> RepoResult<()> {
        let key = canonical_key(key);
        self.update_config(|cfg| repo_set(cfg, key, value))
    }

    /// Every setting of this repository that is set, by key.
    pub fn settings(&self) -> Vec<(String, String)> {
        KEYS.iter()
            .filter_map(|k| repo_get(&self.config, k).map(|v| (k.to_string(), v)))
            .chain(aliases_listed(&self.config.aliases))
            .collect()
    }

    /// What `dmv NAME` stands for when NAME is no command: the repository's
    /// `alias.NAME`, else the global one.
    pub fn alias(&self, name: &str) -> RepoResult<Option<String>> {
        let name = name.to_ascii_lowercase();
        Ok(match self.config.aliases.get(&name) {
            Some(v) => Some(v.clone()),
            None => GlobalSettings::load()?.aliases.get(&name).cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn sizes_read_with_their_units_and_refuse_the_rest() {
        let read = |v: &str| bytes("mount.cacheSize", v).ok();
        assert_eq!(read("4096"), Some(4096));
        assert_eq!(read("2G"), Some(2 << 30));
        assert_eq!(read("500 MiB"), Some(500 << 20));
        assert_eq!(read("1t"), Some(1 << 40));
        assert_eq!(read("1048576K"), Some(1 << 30));
        for bad in [
            "",
            "-1",
            "1.5G",
            "2X",
            "G",
            "99999999999999999999",
            "2000000T",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }
}
