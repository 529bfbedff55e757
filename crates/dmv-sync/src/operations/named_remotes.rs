//! A repository's named remotes (`origin`, …): resolving a name or a URL to
//! a connectable [`RemoteSpec`], adding and removing them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dmv_repo::{RefUpdate, RemoteConfig, Repository};

use crate::operations::reach::ReachBook;
use crate::operations::remote_spec::{RemoteSpec, Transport};
use crate::transport::remote::Remote;
use crate::AddressError;
#[cfg(feature = "s3")]
use crate::BucketOptions;
use crate::{SyncError, SyncResult};
use dmv_repo::ref_names::remote_branch_ref;

/// A remote as a command names it: a configured name, or a URL or path used directly.
#[derive(Clone, Debug)]
pub struct NamedRemote {
    /// How to reach it.
    pub spec: RemoteSpec,
    /// The configured name (None for a URL used directly: nothing is tracked for it).
    pub name: Option<String>,
}

impl NamedRemote {
    /// Connects to it (see [`RemoteSpec::connect`]).
    pub fn connect(&self) -> SyncResult<Box<dyn Remote>> {
        self.spec.connect()
    }

    /// Connects to it for `repo`, noting in `repo`'s reach book how long
    /// that took or why it failed (see [`ReachBook`]).
    pub fn connect_from(&self, repo: &Repository) -> SyncResult<Box<dyn Remote>> {
        let remote = connect_noted(repo, &self.spec)?;
        self.remember_encrypted(repo, remote.as_ref());
        Ok(remote)
    }

    /// Connects to push from `repo`, as [`connect_from`](Self::connect_from):
    /// an empty object-storage location becomes a repository with `repo`'s
    /// chunking on its first push.
    pub fn connect_to_push(&self, repo: &Repository) -> SyncResult<Box<dyn Remote>> {
        let mut spec = self.spec.clone();
        spec.create_with = Some(repo.config.chunking);
        let remote = connect_noted(repo, &spec)?;
        self.remember_encrypted(repo, remote.as_ref());
        Ok(remote)
    }

    /// A remote added without `--encrypt` that turns out to be encrypted
    /// is remembered as such: if the storage later put a plain repository
    /// in its place, nothing would be pushed to it in the clear. (Best
    /// effort: a config that cannot be written now is written next time.)
    fn remember_encrypted(&self, repo: &Repository, remote: &dyn Remote) {
        #[cfg(feature = "s3")]
        if let Some(name) = &self.name {
            if remote.encrypted() && !self.spec.bucket.keys.encrypt {
                let _ = repo.remember_remote_encrypted(name);
            }
        }
        #[cfg(not(feature = "s3"))]
        let _ = (repo, remote);
    }
}

fn connect_noted(repo: &Repository, spec: &RemoteSpec) -> SyncResult<Box<dyn Remote>> {
    let mut book = ReachBook::load(repo);
    let connected = book.connect(spec);
    book.save();
    connected
}

/// A remote URL as stored: local paths made absolute, so the remote still
/// works from any directory.
pub fn normalize_url(url: &str) -> SyncResult<String> {
    match RemoteSpec::parse(url)?.transport {
        Transport::Path(p) => {
            let abs = dmv_os::canonicalize(&p).map_err(|cause| {
                SyncError::Address(AddressError::NoLocalRepository {
                    path: p.clone(),
                    cause,
                })
            })?;
            Ok(abs.to_string_lossy().into_owned())
        }
        _ => Ok(url.to_string()),
    }
}

/// Where an object-storage remote's pack indexes are mirrored in the
/// repository whose `.dmv` directory is `dmv_dir`.
pub fn remote_cache_dir(dmv_dir: &Path, url: &str) -> PathBuf {
    let key = blake3::hash(url.as_bytes()).to_hex();
    dmv_dir.join("remote-cache").join(&key[..16])
}

/// The spec of a configured remote, with everything its config holds.
pub fn configured_spec(repo: &Repository, config: &RemoteConfig) -> SyncResult<RemoteSpec> {
    let mut spec = RemoteSpec::parse(&config.url)?;
    for url in &config.other_urls {
        RemoteSpec::parse(url)?;
    }
    spec.other_urls = config.other_urls.clone();
    spec.token = config.token.clone();
    spec.remote_dmv = config.remote_dmv.clone();
    #[cfg(feature = "s3")]
    {
        spec.bucket = BucketOptions {
            endpoint: config.endpoint.clone(),
            region: config.region.clone(),
            virtual_host_style: config.virtual_host_style,
            keys: dmv_bucket::BucketKeys {
                encrypt: config.encrypt,
                identities: match &config.identity {
                    Some(file) => {
                        vec![std::sync::Arc::new(super::device_keys::read_identity(
                            file,
                        )?)]
                    }
                    None => Vec::new(),
                },
                ..Default::default()
            },
            ..Default::default()
        };
    }
    spec.cache_dir = Some(remote_cache_dir(&repo.dmv, &spec.url));
    spec.stall_after = stall_after(repo, spec.stall_after);
    Ok(spec)
}

/// The repository's `remote.timeout`, else `otherwise` (the global one).
pub(crate) fn stall_after(repo: &Repository, otherwise: Duration) -> Duration {
    repo.config
        .remote_timeout
        .map_or(otherwise, |s| Duration::from_secs(s.into()))
}

/// A configured remote by name, or a URL or path used directly.
pub fn find_remote(repo: &Repository, name_or_url: &str) -> SyncResult<NamedRemote> {
    if let Some(config) = repo.config.remotes.get(name_or_url) {
        return Ok(NamedRemote {
            spec: configured_spec(repo, config)?,
            name: Some(name_or_url.to_string()),
        });
    }
    let looks_like_url = name_or_url.contains("://")
        || name_or_url.contains('/')
        || Path::new(name_or_url).join(".dmv").exists();
    if !looks_like_url {
        return Err(SyncError::Address(AddressError::NoSuchRemote {
            name: name_or_url.to_string(),
        }));
    }
    let mut spec = RemoteSpec::parse(&normalize_url(name_or_url)?)?;
    spec.cache_dir = Some(remote_cache_dir(&repo.dmv, &spec.url));
    spec.stall_after = stall_after(repo, spec.stall_after);
    Ok(NamedRemote { spec, name: None })
}

/// The remote a command talks to when none is named (git's rule): the
/// current branch's upstream remote, else `origin`, else the only remote.
/// `what` names the command for the error when none is chosen.
pub fn default_remote(repo: &Repository, what: &'static str) -> SyncResult<NamedRemote> {
    let upstream = repo.history().head_upstream()?.map(|u| u.remote);
    let only = (repo.config.remotes.len() == 1)
        .then(|| repo.config.remotes.keys().next().cloned())
        .flatten();
    match upstream
        .or_else(|| {
            repo.config
                .remotes
                .contains_key("origin")
                .then(|| "origin".to_string())
        })
        .or(only)
    {
        Some(name) => find_remote(repo, &name),
        None if repo.config.remotes.is_empty() => find_remote(repo, "origin"),
        None => Err(SyncError::Address(AddressError::NeedsNamedRemote { what })),
    }
}

/// What a `pull` with `remote` and `branch` as given (either may be
/// missing) merges: the named remote or the default one, and the named
/// branch, else (with no remote named) the current branch's upstream's, else
/// None (the current branch's name, as [`crate::pull`] takes it).
pub fn pull_source(
    repo: &Repository,
    remote: Option<&str>,
    branch: Option<&str>,
) -> SyncResult<(NamedRemote, Option<String>)> {
    let Some(name) = remote else {
        let upstream = repo.history().head_upstream()?.map(|u| u.branch);
        return Ok((
            default_remote(repo, "pull")?,
            branch.map(str::to_string).or(upstream),
        ));
    };
    Ok((find_remote(repo, name)?, branch.map(str::to_string)))
}

/// The configured remotes in the order to try them for data: `origin`
/// first, then by name.
pub fn remotes_in_order(repo: &Repository) -> Vec<String> {
    let mut names: Vec<String> = repo.config.remotes.keys().cloned().collect();
    names.sort_by_key(|n| (n.as_str() != "origin", n.clone()));
    names
}

/// Adds remote `name` (its URL normalized) to the configuration.
pub fn add_remote(repo: &mut Repository, name: &str, mut config: RemoteConfig) -> SyncResult<()> {
    if name.contains('/') || dmv_repo::validate_ref_name(&remote_branch_ref(name, "x")).is_err() {
        return Err(SyncError::Address(AddressError::BadRemoteName {
            name: name.to_string(),
        }));
    }
    config.url = normalize_url(&config.url)?;
    repo.update_config(|c| {
        if c.remotes.contains_key(name) {
            return Err(SyncError::Address(AddressError::RemoteExists {
                name: name.to_string(),
            }));
        }
        c.remotes.insert(name.to_string(), config);
        Ok(())
    })
}

/// How `set_remote_url` changes a remote's URLs (git's `remote set-url`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlChange {
    /// The first URL becomes this one (a token or ssh user kept in the config stays).
    Replace,
    /// The URL is added after the others: tried when they do not answer.
    Add,
    /// The URL is removed (the last one cannot be).
    Delete,
}

/// Changes remote `name`'s URLs (normalized as `add_remote` does). Returns them all.
pub fn set_remote_url(
    repo: &mut Repository,
    name: &str,
    url: &str,
    change: UrlChange,
) -> SyncResult<Vec<String>> {
    let url = match change {
        UrlChange::Delete => url.to_string(),
        _ => normalize_url(url)?,
    };
    repo.update_config(|c| {
        let remote = c.remotes.get_mut(name).ok_or_else(|| {
            SyncError::Address(AddressError::NoSuchRemote {
                name: name.to_string(),
            })
        })?;
        match change {
            UrlChange::Replace => {
                remote.other_urls.retain(|u| *u != url);
                remote.url = url.clone();
            }
            UrlChange::Add if remote.urls().any(|u| u == url) => {}
            UrlChange::Add => remote.other_urls.push(url.clone()),
            UrlChange::Delete => {
                let mut urls: Vec<String> = remote
                    .urls()
                    .filter(|u| *u != url)
                    .map(str::to_string)
                    .collect();
                if urls.len() == remote.other_urls.len() + 1 {
                    return Err(SyncError::Address(AddressError::BadUrl {
                        url: url.clone(),
                        why: format!("not a URL of remote {name}"),
                    }));
                }
                if urls.is_empty() {
                    return Err(SyncError::Address(AddressError::BadUrl {
                        url: url.clone(),
                        why: format!("the only URL of remote {name} (remove the remote instead)"),
                    }));
                }
                remote.url = urls.remove(0);
                remote.other_urls = urls;
            }
        }
        Ok(remote.urls().map(str::to_string).collect())
    })
}

/// Removes remote `name`, its remote-tracking branches and its mirrored indexes.
pub fn remove_remote(repo: &mut Repository, name: &str) -> SyncResult<RemoteConfig> {
    let removed = repo.update_config(|c| {
        c.remotes.remove(name).ok_or_else(|| {
            SyncError::Address(AddressError::NoSuchRemote {
                name: name.to_string(),
            })
        })
    })?;
    let _ = std::fs::remove_dir_all(remote_cache_dir(&repo.dmv, &removed.url));
    let tracking = repo.refs.list(&remote_branch_ref(name, ""))?;
    let deletes: Vec<RefUpdate> = tracking
        .into_iter()
        .map(|(n, id)| RefUpdate {
            name: n,
            expected: Some(Some(id)),
            new: None,
        })
        .collect();
    if !deletes.is_empty() {
        repo.update_refs(&deletes, &repo.who(), &format!("remote remove {name}"))?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmv_repo::store::ChunkParams;
    use dmv_repo::Upstream;

    fn chosen(repo: &Repository) -> Option<String> {
        default_remote(repo, "pull").ok().and_then(|r| r.name)
    }

    #[test]
    fn the_default_remote_is_the_upstream_else_origin_else_the_only_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
        assert!(
            matches!(default_remote(&repo, "pull"), Err(SyncError::Address(AddressError::NoSuchRemote { name })) if name == "origin")
        );
        add_remote(
            &mut repo,
            "nas",
            RemoteConfig {
                url: "http://nas:8080/photos".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(chosen(&repo).as_deref(), Some("nas"));
        add_remote(
            &mut repo,
            "backup",
            RemoteConfig {
                url: "http://backup:8080/photos".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(matches!(
            default_remote(&repo, "pull"),
            Err(SyncError::Address(AddressError::NeedsNamedRemote {
                what: "pull"
            }))
        ));
        add_remote(
            &mut repo,
            "origin",
            RemoteConfig {
                url: "http://hub:8080/photos".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(chosen(&repo).as_deref(), Some("origin"));
        repo.update_config(|c| {
            Ok::<_, SyncError>(c.upstreams.insert(
                "main".into(),
                Upstream {
                    remote: "nas".into(),
                    branch: "main".into(),
                },
            ))
        })
        .unwrap();
        assert_eq!(chosen(&repo).as_deref(), Some("nas"));
        assert_eq!(remotes_in_order(&repo), ["origin", "backup", "nas"]);
    }

    #[test]
    fn a_remotes_urls_are_added_replaced_and_deleted_as_git_does_and_the_last_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
        add_remote(
            &mut repo,
            "origin",
            RemoteConfig {
                url: "http://a:8080/photos".into(),
                token: Some("t".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let set =
            |repo: &mut Repository, url: &str, change| set_remote_url(repo, "origin", url, change);
        assert_eq!(
            set(&mut repo, "http://b:8080/photos", UrlChange::Add).unwrap(),
            ["http://a:8080/photos", "http://b:8080/photos"]
        );
        assert_eq!(
            set(&mut repo, "http://b:8080/photos", UrlChange::Add)
                .unwrap()
                .len(),
            2,
            "a URL is listed once"
        );
        assert_eq!(
            set(&mut repo, "http://c:8080/photos", UrlChange::Replace).unwrap(),
            ["http://c:8080/photos", "http://b:8080/photos"]
        );
        assert_eq!(
            set(&mut repo, "http://c:8080/photos", UrlChange::Delete).unwrap(),
            ["http://b:8080/photos"]
        );
        assert!(
            set(&mut repo, "http://z:8080/photos", UrlChange::Delete).is_err(),
            "not one of its URLs"
        );
        assert!(
            set(&mut repo, "http://b:8080/photos", UrlChange::Delete).is_err(),
            "the last URL stays"
        );
        assert!(set(&mut repo, "not a url://x", UrlChange::Add).is_err());
        assert_eq!(
            repo.config.remotes["origin"].token.as_deref(),
            Some("t"),
            "the token stays with the remote"
        );
        let spec = find_remote(&repo, "origin").unwrap().spec;
        assert_eq!(
            (spec.url.as_str(), spec.other_urls.len()),
            ("http://b:8080/photos", 0)
        );
    }

    #[test]
    fn a_pull_merges_the_upstreams_branch_unless_a_remote_or_branch_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = Repository::init(dir.path(), ChunkParams::default()).unwrap();
        for name in ["origin", "nas"] {
            add_remote(
                &mut repo,
                name,
                RemoteConfig {
                    url: format!("http://{name}:8080/photos"),
                    ..Default::default()
                },
            )
            .unwrap();
        }
        let source = |remote: Option<&str>, branch: Option<&str>| {
            let (r, b) = pull_source(&repo, remote, branch).unwrap();
            (r.name.unwrap(), b)
        };
        assert_eq!(
            source(None, None),
            ("origin".into(), None),
            "no upstream: origin, and the current branch's name"
        );
        repo.update_config(|c| {
            Ok::<_, SyncError>(c.upstreams.insert(
                "main".into(),
                Upstream {
                    remote: "nas".into(),
                    branch: "trunk".into(),
                },
            ))
        })
        .unwrap();
        let source = |remote: Option<&str>, branch: Option<&str>| {
            let (r, b) = pull_source(&repo, remote, branch).unwrap();
            (r.name.unwrap(), b)
        };
        assert_eq!(source(None, None), ("nas".into(), Some("trunk".into())));
        assert_eq!(
            source(None, Some("dev")),
            ("nas".into(), Some("dev".into()))
        );
        // A remote named: its branch of the current branch's name, not the upstream's.
        assert_eq!(source(Some("origin"), None), ("origin".into(), None));
    }
}
