use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dmv_store::ChunkParams;
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::repository::slice::Slice;
use crate::{RepoError, RepoResult};

/// 2: the repository lists its requirements in `.dmv/requires` (the dmv of
/// format 1 refuses format 2, so it cannot misread what it does not know).
pub const FORMAT_VERSION: u32 = 2;
/// Repositories made before `.dmv/requires`: opened, and upgraded.
pub const FORMAT_WITHOUT_REQUIRES: u32 = 1;

/// `.dmv/config` (JSON). `format` and `chunking` are fixed at init.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Config {
    /// The repository format (`FORMAT_VERSION`, or `FORMAT_WITHOUT_REQUIRES` until upgraded at open).
    pub format: u32,
    /// How file data is cut into chunks; fixed at init.
    pub chunking: ChunkParams,
    /// The size, in bytes, at which the store starts a new pack file (64 MiB at init).
    pub pack_size_limit: u64,
    /// `user.name`: who signs commits here (before the global setting).
    #[serde(default)]
    pub user_name: Option<String>,
    /// `user.email`: the signer's email (before the global setting).
    #[serde(default)]
    pub user_email: Option<String>,
    /// Shell command run on each file both sides of a merge changed (see merge.rs).
    #[serde(default)]
    pub merge_tool: Option<String>,
    /// `merge.conflictStyle`: how a text file's conflicts are marked (`merge`, `diff3`, `zdiff3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_conflict_style: Option<String>,
    /// `color.ui`: auto, always or never (git's values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color_ui: Option<String>,
    /// `core.pager`: the command long output is shown through on a terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_pager: Option<String>,
    /// `core.editor`: the program a commit message is written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_editor: Option<String>,
    /// `alias.NAME`: what `dmv NAME` runs (`!` first: a shell command).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
    /// A bare repository has no working tree: it only receives pushes.
    #[serde(default)]
    pub bare: bool,
    /// The remotes, by name.
    #[serde(default)]
    pub remotes: std::collections::BTreeMap<String, RemoteConfig>,
    /// Which files' data this replica fetches and keeps.
    #[serde(default, skip_serializing_if = "Slice::is_full")]
    pub slice: Slice,
    /// This replica may lack file data (it has a slice, or dropped some):
    /// absent data is then a normal state, not damage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// How many copies of a file's data `drop` leaves, counting every
    /// replica that confirms it holds them (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numcopies: Option<u32>,
    /// Whether this replica's data may be dropped (default: yes, except in a
    /// bare repository of full slice: a hub others clone keeps everything
    /// unless its admin says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops_allowed: Option<bool>,
    /// `lock.releaseOnPush`: whether a push that lands a change of a path
    /// this user holds locked gives the lock back (default: yes, as
    /// Anchorpoint and Diversion do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_release_on_push: Option<bool>,
    /// `review.protect`: branches that move only by landing a review, each
    /// with the approvals of the branch's commit it needs (`main=1`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protected_branches: BTreeMap<String, u32>,
    /// Seconds a remote may go without answering before it is abandoned
    /// (`remote.timeout`; default in dmv-sync).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_timeout: Option<u32>,
    /// `mount.cacheSize`: bytes of file data read through a working-tree
    /// mount that stay here (the least recently read are dropped past it;
    /// None: all stay until `dmv drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_cache_size: Option<u64>,
    /// What other replicas call this one (default: user@host:path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_name: Option<String>,
    /// URLs this replica publishes to every replica that hears of it
    /// (`dmv replica --publish`), so they can fetch from it without
    /// configuring it as a remote. Never with credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub publish: Vec<String>,
    /// This replica pays for what it sends (a phone on mobile data): others
    /// do not pull file data from it unless told to (`dmv replica --metered`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub metered: bool,
    /// Each local branch's upstream (git's branch.NAME.remote and .merge):
    /// what `pull` merges and `branch -vv` shows.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub upstreams: std::collections::BTreeMap<String, Upstream>,
}

/// A remote branch a local branch follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upstream {
    /// The remote's name in [`Config::remotes`].
    pub remote: String,
    /// The branch's short name on the remote.
    pub branch: String,
}

/// A named remote: where it is and how to talk to it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RemoteConfig {
    /// Where the remote is: a path or a URL (`dmv-sync` parses it).
    pub url: String,
    /// The same remote's other URLs (a hub tier behind several addresses):
    /// when one does not answer, the next is tried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_urls: Vec<String>,
    /// Bearer token for an HTTP remote (DMV_TOKEN overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The dmv command on the far side of an ssh remote (default `dmv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_dmv: Option<String>,
    /// Object storage: the S3 endpoint (default: AWS_ENDPOINT_URL, else AWS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Object storage: the region (default: AWS_REGION, else us-east-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Object storage: virtual-host-style addressing instead of path style.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub virtual_host_style: bool,
    /// Object storage: the repository there is encrypted (made so by the
    /// first push), and nothing goes to one that is not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub encrypt: bool,
    /// Object storage: a device key file that opens the encrypted
    /// repository there, besides this device's own key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<PathBuf>,
}

impl RemoteConfig {
    /// Every URL of the remote, the first one first.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.url.as_str()).chain(self.other_urls.iter().map(String::as_str))
    }
}

impl Config {
    /// See [`Config::drops_allowed`].
    pub fn may_drop(&self) -> bool {
        self.drops_allowed
            .unwrap_or(!self.bare || !self.slice.is_full())
    }

    /// See [`Config::lock_release_on_push`].
    pub fn releases_locks_on_push(&self) -> bool {
        self.lock_release_on_push.unwrap_or(true)
    }

    /// The config of a new repository: current format, a full slice, no remotes.
    pub fn new(chunking: ChunkParams) -> Config {
        Config {
            format: FORMAT_VERSION,
            chunking,
            pack_size_limit: 64 << 20,
            user_name: None,
            user_email: None,
            merge_tool: None,
            merge_conflict_style: None,
            color_ui: None,
            core_pager: None,
            core_editor: None,
            aliases: BTreeMap::new(),
            bare: false,
            remotes: Default::default(),
            slice: Slice::Full,
            partial: false,
            replica_name: None,
            publish: Vec::new(),
            metered: false,
            numcopies: None,
            drops_allowed: None,
            lock_release_on_push: None,
            protected_branches: BTreeMap::new(),
            remote_timeout: None,
            mount_cache_size: None,
            upstreams: Default::default(),
        }
    }

    /// Reads `.dmv/config`. Fails with [`RepoError::Corrupt`] if it does not parse or its
    /// chunking is invalid, [`RepoError::UnsupportedFormat`] if its format is unknown.
    pub fn load(path: &Path) -> RepoResult<Config> {
        let text = std::fs::read(path).at(path)?;
        let cfg: Config = serde_json::from_slice(&text).map_err(|e| RepoError::Corrupt {
            path: path.into(),
            detail: e.to_string(),
        })?;
        if cfg.format != FORMAT_VERSION && cfg.format != FORMAT_WITHOUT_REQUIRES {
            return Err(RepoError::UnsupportedFormat {
                found: cfg.format,
                supported: FORMAT_VERSION,
            });
        }
        cfg.chunking.validate().map_err(|d| RepoError::Corrupt {
            path: path.into(),
            detail: d,
        })?;
        Ok(cfg)
    }

    /// Writes the settings with a `checksum` of them (see `check_file`).
    pub fn save(&self, path: &Path) -> RepoResult<()> {
        let encode = |e: serde_json::Error| RepoError::Encode {
            what: "the configuration",
            detail: e.to_string(),
        };
        let mut value = serde_json::to_value(self).map_err(encode)?;
        let sum = settings_checksum(&value);
        value[CHECKSUM] = sum.into();
        let text = serde_json::to_vec_pretty(&value).map_err(encode)?;
        // A token is a secret: the file holding one is for its owner's eyes only.
        match self.remotes.values().any(|r| r.token.is_some()) {
            true => crate::atomic::write_atomic_private(path, &text),
            false => crate::atomic::write_atomic(path, &text),
        }
    }

    /// What `fsck` finds wrong with the config file at `path` that loading
    /// forgives: settings that do not match the `checksum` dmv wrote with
    /// them (a flipped bit that still parses, as another URL or number), or,
    /// in a file without one (written by hand), keys dmv does not know.
    pub fn check_file(path: &Path) -> Vec<String> {
        let problem = |detail: String| vec![format!("{}: {detail}", path.display())];
        let value: serde_json::Value = match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(v) => v,
            Err(e) => return problem(e),
        };
        match value.get(CHECKSUM) {
            Some(sum) if sum.as_str() == Some(&settings_checksum(&value)) => Vec::new(),
            Some(_) => problem(format!("the settings do not match their checksum: damaged, or edited by hand (if you edited it, delete its \"{CHECKSUM}\" line)")),
            None => {
                let mut unknown = Vec::new();
                let _: Result<Config, _> = serde_ignored::deserialize(&value, |key| unknown.push(key.to_string()));
                unknown.into_iter().flat_map(|k| problem(format!("unknown setting {k} (damaged, or misspelt)"))).collect()
            }
        }
    }
}

/// The key of the settings' checksum in `.dmv/config`.
const CHECKSUM: &str = "checksum";

/// A hash of every setting but the checksum, as compact JSON with sorted
/// keys: how the file is laid out does not change it, any value or key does.
fn settings_checksum(value: &serde_json::Value) -> String {
    let mut settings = value.clone();
    if let Some(map) = settings.as_object_mut() {
        map.remove(CHECKSUM);
    }
    crate::seal::digest(settings.to_string().as_bytes())
}

/// The global file's settings (JSON, written by dmv or by hand).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalSettings {
    /// `user.name` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    /// `user.email` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_email: Option<String>,
    /// `merge.tool` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_tool: Option<String>,
    /// `merge.conflictStyle` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_conflict_style: Option<String>,
    /// `remote.timeout` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_timeout: Option<u32>,
    /// `color.ui` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color_ui: Option<String>,
    /// `core.pager` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_pager: Option<String>,
    /// `init.defaultBranch`: the first branch of a new repository (default main).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_default_branch: Option<String>,
    /// `core.editor` for every repository without its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_editor: Option<String>,
    /// `alias.NAME` for every repository (a repository's own wins).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aliases: BTreeMap<String, String>,
}

/// The name in an `alias.NAME` key, if `key` is one: letters, digits and
/// `-`, as git allows them, at most 64 bytes.
pub fn alias_name(key: &str) -> Option<&str> {
    let name = key
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("alias."))
        .map(|_| &key[6..])?;
    (!name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    .then_some(name)
}

/// Where the global settings live, if a home is known.
pub fn global_path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".config")))
        .map(|d| d.join("dmv").join("config"))
}

impl GlobalSettings {
    /// The global settings; none when there is no file yet.
    pub fn load() -> RepoResult<GlobalSettings> {
        let Some(path) = global_path() else {
            return Ok(GlobalSettings::default());
        };
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RepoError::Corrupt {
                path,
                detail: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(GlobalSettings::default()),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// A setting by its key (`user.name`, `user.email`, `merge.tool`,
    /// `remote.timeout`); None if unset or unknown.
    pub fn get(&self, key: &str) -> Option<String> {
        match key {
            "user.name" => self.user_name.clone(),
            "user.email" => self.user_email.clone(),
            "merge.tool" => self.merge_tool.clone(),
            "merge.conflictStyle" => self.merge_conflict_style.clone(),
            "remote.timeout" => self.remote_timeout.map(|s| s.to_string()),
            "color.ui" => self.color_ui.clone(),
            "core.pager" => self.core_pager.clone(),
            "init.defaultBranch" => self.init_default_branch.clone(),
            "core.editor" => self.core_editor.clone(),
            _ => alias_name(key).and_then(|n| self.aliases.get(&n.to_ascii_lowercase()).cloned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_checksum_is_pinned_and_fsck_sees_every_changed_setting() {
        // Golden: compact JSON, keys sorted, without the checksum itself.
        let value =
            serde_json::json!({"b": [1, "x"], "a": {"d": null, "c": true}, "checksum": "anything"});
        assert_eq!(
            settings_checksum(&value),
            crate::seal::digest(br#"{"a":{"c":true,"d":null},"b":[1,"x"]}"#)
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let mut config = Config::new(ChunkParams::default());
        config.remotes.insert(
            "hub".into(),
            RemoteConfig {
                url: "/srv/hub".into(),
                ..Default::default()
            },
        );
        config.save(&path).unwrap();
        assert_eq!(Config::check_file(&path), Vec::<String>::new());
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let write = |v: &serde_json::Value, pretty: bool| {
            std::fs::write(
                &path,
                if pretty {
                    serde_json::to_vec_pretty(v)
                } else {
                    serde_json::to_vec(v)
                }
                .unwrap(),
            )
            .unwrap()
        };

        // Laid out otherwise, it means the same.
        write(&saved, false);
        assert!(Config::check_file(&path).is_empty());
        // Another URL that parses, a renamed key: both reported.
        let mut url = saved.clone();
        url["remotes"]["hub"]["url"] = "/srv/hua".into();
        write(&url, true);
        assert!(
            Config::check_file(&path)[0].contains("do not match their checksum"),
            "{:?}",
            Config::check_file(&path)
        );
        let mut key = saved.clone();
        let limit = key
            .as_object_mut()
            .unwrap()
            .remove("pack_size_limit")
            .unwrap();
        key["pack_size_limif"] = limit;
        write(&key, true);
        assert_eq!(Config::check_file(&path).len(), 1);
        // Without a checksum (edited by hand): clean, unless a key is unknown, at any depth.
        let mut hand = saved.clone();
        let checksum = hand.as_object_mut().unwrap().remove(CHECKSUM).unwrap();
        write(&hand, true);
        assert!(Config::check_file(&path).is_empty());
        hand["remotes"]["hub"]["tokem"] = "t".into();
        hand["checksuo"] = checksum;
        write(&hand, true);
        let problems = Config::check_file(&path);
        assert!(
            problems.len() == 2
                && problems.iter().any(|p| p.contains("remotes.hub.tokem"))
                && problems.iter().any(|p| p.contains("checksuo")),
            "{problems:?}"
        );
        assert!(Config::load(&path).is_ok());
    }
}
