//! The `container` part of `run.json`: which engine a container run is on, which image (by id
//! and digest) its ranks run, how they were given GPUs, and each rank's container.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::docker::{HostSpec, TlsFiles};
use crate::runs::record::RunState;

/// How a container run was set up; absent from a host run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRecord {
    /// The engine the containers are on, as `--docker-host` / `DOCKER_HOST` resolved when the
    /// run started (`unix:///var/run/docker.sock`): `stop` and `runs` go back to the same one.
    pub engine: String,
    /// The client certificate files for a TLS engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_tls: Option<EngineTls>,
    /// The image's id (`sha256:...`, the digest of its config): exactly what ran, whatever its
    /// tag points at later.
    pub image_id: String,
    /// Its registry digests (`repo@sha256:...`); empty for an image built or imported here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_digests: Vec<String>,
    /// `bridge` or `none` (one container), `host` (per-gpu, so ranks meet on 127.0.0.1).
    pub network: String,
    /// How GPUs were asked for: `none`, `device-request` (by UUID) or `cdi`.
    pub gpu_request: String,
    /// Whether the containers stay after the run.
    #[serde(default)]
    pub keep: bool,
    /// One per rank, rank order.
    #[serde(default)]
    pub containers: Vec<RankContainerRef>,
    /// What a reader found on the engine for a run whose supervisor is gone; never written.
    #[serde(skip)]
    pub observed: Option<RunState>,
    /// Set by the supervisor while the engine is away (it waits for it; the containers run on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_away: Option<EngineAway>,
}

/// The engine stopped answering the supervisor of a running container run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineAway {
    /// When the supervisor noticed, Unix milliseconds.
    pub since_ms: u64,
    /// The failure that showed it.
    pub detail: String,
}

/// A rank's container: its name (known before it exists) and, once created, its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankContainerRef {
    pub rank: usize,
    pub name: String,
    #[serde(default)]
    pub id: Option<String>,
}

/// `ca.pem`, `cert.pem`, `key.pem` of a TLS engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl ContainerRecord {
    /// The engine as a connection address.
    pub fn host_spec(&self) -> HostSpec {
        HostSpec {
            uri: self.engine.clone(),
            tls: self.engine_tls.as_ref().map(|t| TlsFiles {
                ca: t.ca.clone(),
                cert: t.cert.clone(),
                key: t.key.clone(),
            }),
        }
    }

    /// The id, else the name, of each rank's container, rank order.
    pub fn handles(&self) -> Vec<String> {
        self.containers
            .iter()
            .map(|c| c.id.clone().unwrap_or_else(|| c.name.clone()))
            .collect()
    }
}

/// The part of a resolved engine address run.json keeps.
pub(crate) fn engine_fields(spec: &HostSpec) -> (String, Option<EngineTls>) {
    let tls = spec.tls.as_ref().map(|t| EngineTls {
        ca: t.ca.clone(),
        cert: t.cert.clone(),
        key: t.key.clone(),
    });
    (spec.uri.clone(), tls)
}
