//! After a "manifest unknown", asks a plain-HTTP registry whether the repository exists, to tell a wrong name from a wrong tag.
//!
//! Registries such as distribution 2.8 answer MANIFEST_UNKNOWN for a missing repository and a
//! missing tag alike, and the Engine passes that on word for word. Only the registry's tag list
//! can tell them apart. This speaks just enough HTTP/1.0 for registries the Engine itself reaches
//! over plain HTTP (loopback and configured insecure registries); TLS registries are left alone.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use base64::Engine as _;
use bollard::auth::DockerCredentials;
use bollard::Docker;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::reference::ImageRef;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
const MAX_RESPONSE: u64 = 1 << 20;

/// What a registry's tag list said about a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagListing {
    /// The repository exists with these tags.
    Tags(Vec<String>),
    /// The registry does not know the repository.
    NoSuchRepository,
}

#[derive(Deserialize)]
struct TagList {
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct ErrorList {
    errors: Vec<RegistryError>,
}

#[derive(Deserialize)]
struct RegistryError {
    code: String,
}

/// The repository's tags when the registry is reachable over plain HTTP and answers; `None`
/// whenever it cannot be known (TLS registry, auth needed, timeout, anything unexpected).
pub async fn list_tags(
    docker: &Docker,
    image: &ImageRef,
    credentials: Option<&DockerCredentials>,
) -> Option<TagListing> {
    let host = image.registry()?;
    if !served_over_http(docker, host).await {
        return None;
    }
    let path = format!("/v2/{}/tags/list", image.repository());
    let response = tokio::time::timeout(PROBE_TIMEOUT, get(host, &path, credentials))
        .await
        .ok()??;
    parse_tag_listing(&response)
}

/// The Engine falls back to plain HTTP for loopback registries and those configured insecure.
async fn served_over_http(docker: &Docker, host: &str) -> bool {
    let name = host_name(host);
    if name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
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
    let in_insecure_cidr = name.parse::<Ipv4Addr>().is_ok_and(|ip| {
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

async fn get(host: &str, path: &str, credentials: Option<&DockerCredentials>) -> Option<String> {
    let address = if host.contains(':') && !host.ends_with(']') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let mut stream = TcpStream::connect(address).await.ok()?;
    let mut request =
        format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n");
    if let Some((user, password)) =
        credentials.and_then(|c| Some((c.username.as_ref()?, c.password.as_ref()?)))
    {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        request.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut body = Vec::new();
    stream
        .take(MAX_RESPONSE)
        .read_to_end(&mut body)
        .await
        .ok()?;
    String::from_utf8(body).ok()
}

/// Reads an HTTP/1.0 response: status 200 with a tag list, or 404 with NAME_UNKNOWN.
fn parse_tag_listing(response: &str) -> Option<TagListing> {
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?;
    match status {
        "200" => {
            let list: TagList = serde_json::from_str(body).ok()?;
            Some(TagListing::Tags(list.tags.unwrap_or_default()))
        }
        "404" => {
            let errors: ErrorList = serde_json::from_str(body).ok()?;
            errors
                .errors
                .iter()
                .any(|e| e.code == "NAME_UNKNOWN")
                .then_some(TagListing::NoSuchRepository)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_lists_and_unknown_names_are_read() {
        let ok = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"name\":\"probe/img\",\"tags\":[\"1\",\"2\"]}";
        assert_eq!(
            parse_tag_listing(ok),
            Some(TagListing::Tags(vec!["1".into(), "2".into()]))
        );
        let missing = "HTTP/1.0 404 Not Found\r\n\r\n{\"errors\":[{\"code\":\"NAME_UNKNOWN\",\"message\":\"repository name not known to registry\"}]}";
        assert_eq!(
            parse_tag_listing(missing),
            Some(TagListing::NoSuchRepository)
        );
        let auth = "HTTP/1.0 401 Unauthorized\r\n\r\n{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}";
        assert_eq!(parse_tag_listing(auth), None);
        assert_eq!(parse_tag_listing("garbage"), None);
    }

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
}
