use std::path::Path;

use dmv_store::ChunkParams;
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::slice::Slice;
use crate::{RepoError, RepoResult};

/// 2: the repository lists its requirements in `.dmv/requires` (the dmv of
/// format 1 refuses format 2, so it cannot misread what it does not know).
pub const FORMAT_VERSION: u32 = 2;
/// Repositories made before `.dmv/requires`: opened, and upgraded.
pub const FORMAT_WITHOUT_REQUIRES: u32 = 1;

/// `.dmv/config` (JSON). `format` and `chunking` are fixed at init.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Config {
    pub format: u32,
    pub chunking: ChunkParams,
    pub pack_size_limit: u64,
    #[serde(default)]
    pub user_name: Option<String>,
    #[serde(default)]
    pub user_email: Option<String>,
    /// Shell command run on each file both sides of a merge changed (see merge.rs).
    #[serde(default)]
    pub merge_tool: Option<String>,
    /// A bare repository has no working tree: it only receives pushes.
    #[serde(default)]
    pub bare: bool,
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
    /// What other replicas call this one (default: user@host:path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_name: Option<String>,
}

/// A named remote: where it is and how to talk to it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RemoteConfig {
    pub url: String,
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
}

impl Config {
    pub fn new(chunking: ChunkParams) -> Config {
        Config {
            format: FORMAT_VERSION,
            chunking,
            pack_size_limit: 64 << 20,
            user_name: None,
            user_email: None,
            merge_tool: None,
            bare: false,
            remotes: Default::default(),
            slice: Slice::Full,
            partial: false,
            replica_name: None,
            numcopies: None,
        }
    }

    pub fn load(path: &Path) -> RepoResult<Config> {
        let text = std::fs::read(path).at(path)?;
        let cfg: Config = serde_json::from_slice(&text).map_err(|e| RepoError::Corrupt { path: path.into(), detail: e.to_string() })?;
        if cfg.format != FORMAT_VERSION && cfg.format != FORMAT_WITHOUT_REQUIRES {
            return Err(RepoError::UnsupportedFormat { found: cfg.format, supported: FORMAT_VERSION });
        }
        cfg.chunking.validate().map_err(|d| RepoError::Corrupt { path: path.into(), detail: d })?;
        Ok(cfg)
    }

    pub fn save(&self, path: &Path) -> RepoResult<()> {
        let text = serde_json::to_vec_pretty(self).map_err(|e| RepoError::Encode { what: "the configuration", detail: e.to_string() })?;
        crate::atomic::write_atomic(path, &text)
    }
}
