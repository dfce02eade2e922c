//! Where a registry's API lives: Docker Hub's API host, and whether to speak plain HTTP the way the Engine does.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use bollard::Docker;

use crate::image::{ImageRef, DEFAULT_REGISTRY};

/// Docker Hub's registry API; `docker.io` itself only redirects.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";
/// How long a whole registry read may take, from the first request to the parsed config.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// Speak plain HTTP instead of HTTPS: only for registries the Engine itself reaches over
    /// plain HTTP (loopback ones and configured insecure registries).
    pub plain_http: bool,
    /// The limit for the whole read, after which it fails with `RemoteError::Timeout`.
    pub timeout: Duration,
}

impl FetchOptions {
    /// HTTPS, except plain HTTP for a loopback registry (which the Engine allows by default).
    pub fn for_image(image: &ImageRef) -> FetchOptions {
        FetchOptions {
            plain_http: is_loopback(image.registry_host()),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// As the Engine would: plain HTTP also for the insecure registries in its configuration.
    pub async fn like_engine(docker: &Docker, image: &ImageRef) -> FetchOptions {
        FetchOptions {
            plain_http: served_over_http(docker, image.registry_host()).await,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// The `scheme://host[:port]` of the registry's API.
pub(crate) fn api_base(image: &ImageRef, plain_http: bool) -> String {
    let host = match image.registry_host() {
        DEFAULT_REGISTRY => DOCKER_HUB_API,
        other => other,
    };
    let scheme = if plain_http { "http" } else { "https" };
    format!("{scheme}://{host}")
}

/// Whether a registry host names this machine (`localhost`, `127.x.y.z`, `[::1]`).
pub(crate) fn is_loopback(host: &str) -> bool {
    let name = host_name(host);
    name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The Engine falls back to plain HTTP for loopback registries and those configured insecure.
pub async fn served_over_http(docker: &Docker, host: &str) -> bool {
    if is_loopback(host) {
        return true;
    }
    let Ok(info) = docker.info().await else {
        return false;
    };
    let Some(config) = info.registry_config else {
        return false;
    };
    let listed_insecure = config
        .index_configs
        .as_ref()
        .and_then(|configs| configs.get(host))
        .is_some_and(|index| index.secure == Some(false));
    let in_insecure_cidr = host_name(host).parse::<Ipv4Addr>().is_ok_and(|ip| {
        config
            .insecure_registry_cidrs
            .iter()
            .flatten()
            .any(|cidr| ipv4_in_cidr(ip, cidr))
    });
    listed_insecure || in_insecure_cidr
}

fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.split(':').next().unwrap_or(host)
}

fn ipv4_in_cidr(ip: Ipv4Addr, cidr: &str) -> bool {
    let Some((net, bits)) = cidr.split_once('/') else {
        return false;
    };
    let (Ok(net), Ok(bits)) = (net.parse::<Ipv4Addr>(), bits.parse::<u32>()) else {
        return false;
    };
    if bits > 32 {
        return false;
    }
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_cidrs() {
        assert_eq!(host_name("127.0.0.1:5000"), "127.0.0.1");
        assert_eq!(host_name("[::1]:5000"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert!(ipv4_in_cidr(ip("127.3.2.1"), "127.0.0.0/8"));
        assert!(ipv4_in_cidr(ip("10.1.2.3"), "10.1.2.3/32"));
        assert!(ipv4_in_cidr(ip("8.8.8.8"), "0.0.0.0/0"));
        assert!(!ipv4_in_cidr(ip("192.168.1.1"), "10.0.0.0/8"));
        assert!(!ipv4_in_cidr(ip("10.0.0.1"), "nonsense"));
    }

    #[test]
    fn docker_hub_is_reached_at_its_api_host_over_https() {
        let hub = ImageRef::parse("tensorflow/tensorflow:2.17.0-gpu").unwrap();
        assert_eq!(api_base(&hub, false), "https://registry-1.docker.io");
        assert!(!FetchOptions::for_image(&hub).plain_http);
        let local = ImageRef::parse("localhost:5000/x:1").unwrap();
        assert!(FetchOptions::for_image(&local).plain_http);
        assert_eq!(api_base(&local, true), "http://localhost:5000");
        assert!(is_loopback("[::1]:5000"));
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(!is_loopback("nvcr.io"));
        assert_eq!(FetchOptions::for_image(&local).timeout, DEFAULT_TIMEOUT);
    }
}
