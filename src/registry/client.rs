//! One conversation with a registry about one repository: HTTP through reqwest, Basic and Bearer auth, size-capped bodies.

use std::error::Error as _;
use std::time::Duration;

use bollard::auth::DockerCredentials;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use serde::Deserialize;

use super::challenge::{parse_challenge, Challenge};
use super::endpoint::is_loopback;
use super::error::{classify, Refusal, RemoteError};

/// Manifests, configs, tag lists and tokens are small; anything bigger is not what was asked for.
pub(crate) const MAX_BODY: usize = 4 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const USER_AGENT: &str = concat!("gpudeck/", env!("CARGO_PKG_VERSION"));

/// A 2xx-or-not answer with its body read.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: Option<String>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Requests against `base` for `repository`, remembering the authorization that worked.
pub(crate) struct Session<'a> {
    http: reqwest::Client,
    base: String,
    /// The registry as users name it (`docker.io`, `127.0.0.1:5000`), for messages.
    pub registry: String,
    pub repository: String,
    credentials: Option<&'a DockerCredentials>,
    authorization: Option<String>,
}

impl<'a> Session<'a> {
    pub fn new(
        base: String,
        registry: &str,
        repository: &str,
        credentials: Option<&'a DockerCredentials>,
    ) -> Result<Session<'a>, RemoteError> {
        // reqwest's rustls needs a process-wide provider; ring is the one bollard already uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(USER_AGENT)
            .https_only(base.starts_with("https://"));
        if is_loopback(registry) {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| RemoteError::Unreachable {
            registry: registry.to_string(),
            detail: format!("the HTTP client could not be set up: {}", chain(&e)),
        })?;
        // A registry token from `docker login` is already a bearer token.
        let authorization = credentials
            .and_then(|c| c.registrytoken.as_deref())
            .map(|token| format!("Bearer {token}"));
        Ok(Session {
            http,
            base,
            registry: registry.to_string(),
            repository: repository.to_string(),
            credentials,
            authorization,
        })
    }

    /// GETs `/v2/<repository>/<suffix>`, answering one auth challenge on the way. Non-2xx
    /// answers other than auth failures come back for the caller to put in context.
    pub async fn get(&mut self, suffix: &str, accept: &str) -> Result<Answer, RemoteError> {
        let url = format!("{}/v2/{}/{suffix}", self.base, self.repository);
        let response = self.send(&url, accept).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return self.read(response).await;
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|h| h.to_str().ok())
            .and_then(parse_challenge);
        let first = self.read(response).await?;
        let Some(challenge) = challenge else {
            return Err(self.refused(&Refusal::Unauthorized(detail_of(&first))));
        };
        self.authorize(challenge, &first).await?;
        let answer = self.read(self.send(&url, accept).await?).await?;
        match answer.status {
            401 | 403 => Err(self.refused(&Refusal::Unauthorized(detail_of(&answer)))),
            _ => Ok(answer),
        }
    }

    /// The error for a refusal that means the same whatever was asked for.
    pub fn refused(&self, refusal: &Refusal) -> RemoteError {
        let registry = self.registry.clone();
        let repository = self.repository.clone();
        match refusal {
            Refusal::Unauthorized(detail) if self.has_credentials() => RemoteError::AuthDenied {
                registry,
                repository,
                detail: detail.clone(),
            },
            Refusal::Unauthorized(detail) => RemoteError::AuthRequired {
                registry,
                repository,
                detail: detail.clone(),
            },
            Refusal::RateLimited => RemoteError::RateLimited { registry },
            Refusal::UnknownName(_) => RemoteError::UnknownRepository {
                image: repository.clone(),
                registry,
                repository,
            },
            Refusal::UnknownManifest(detail) | Refusal::Other(_, detail) => {
                let status = match refusal {
                    Refusal::Other(status, _) => *status,
                    _ => 404,
                };
                RemoteError::Unexpected {
                    registry,
                    what: format!("a request about {repository}"),
                    status,
                    detail: detail.clone(),
                }
            }
        }
    }

    fn has_credentials(&self) -> bool {
        basic_login(self.credentials).is_some() || self.authorization.is_some()
    }

    /// Sets the authorization a challenge asks for, fetching a token for Bearer.
    async fn authorize(&mut self, challenge: Challenge, first: &Answer) -> Result<(), RemoteError> {
        let header = match challenge {
            Challenge::Basic => {
                let Some((user, password)) = basic_login(self.credentials) else {
                    return Err(self.refused(&Refusal::Unauthorized(detail_of(first))));
                };
                basic_header(user, password)
            }
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                let scope = scope.unwrap_or_else(|| format!("repository:{}:pull", self.repository));
                let token = self.fetch_token(&realm, service.as_deref(), &scope).await?;
                format!("Bearer {token}")
            }
        };
        self.authorization = Some(header);
        Ok(())
    }

    /// The distribution token flow: GET the realm with service and scope, logged in if we can.
    async fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
    ) -> Result<String, RemoteError> {
        let mut url = Url::parse(realm).map_err(|e| self.malformed("its token realm", e))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", scope);
        }
        let mut request = self.http.get(url.clone());
        if let Some((user, password)) = basic_login(self.credentials) {
            request = request.header(AUTHORIZATION, basic_header(user, password));
        }
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let answer = self.read(response).await?;
        match answer.status {
            200..=299 => parse_token(&answer.body).map_err(|e| self.malformed("a token", e)),
            401 | 403 => Err(self.refused(&Refusal::Unauthorized(detail_of(&answer)))),
            status => Err(RemoteError::Unexpected {
                registry: url.host_str().unwrap_or(realm).to_string(),
                what: "a token".to_string(),
                status,
                detail: detail_of(&answer),
            }),
        }
    }

    async fn send(&self, url: &str, accept: &str) -> Result<Response, RemoteError> {
        let mut request: RequestBuilder = self.http.get(url).header(ACCEPT, accept);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization);
        }
        request.send().await.map_err(|e| self.transport(&e))
    }

    /// Reads the body, refusing more than [`MAX_BODY`] bytes.
    async fn read(&self, mut response: Response) -> Result<Answer, RemoteError> {
        let status = response.status().as_u16();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(CONTENT_TYPE);
        let declared = header(CONTENT_LENGTH).and_then(|l| l.parse::<usize>().ok());
        let too_big = || self.malformed("an answer", format!("it is larger than {MAX_BODY} bytes"));
        if declared.is_some_and(|length| length > MAX_BODY) {
            return Err(too_big());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(&e))? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            body,
            content_type,
        })
    }

    fn transport(&self, error: &reqwest::Error) -> RemoteError {
        if error.is_timeout() {
            return RemoteError::Timeout {
                registry: self.registry.clone(),
                timeout: CONNECT_TIMEOUT,
            };
        }
        RemoteError::Unreachable {
            registry: self.registry.clone(),
            detail: chain(error),
        }
    }

    pub fn malformed(&self, what: &str, detail: impl ToString) -> RemoteError {
        RemoteError::Malformed {
            registry: self.registry.clone(),
            what: what.to_string(),
            detail: detail.to_string(),
        }
    }
}

/// The registry's own words for a failed answer.
pub(crate) fn detail_of(answer: &Answer) -> String {
    match classify(answer.status, &answer.body) {
        Refusal::Unauthorized(d)
        | Refusal::UnknownName(d)
        | Refusal::UnknownManifest(d)
        | Refusal::Other(_, d) => d,
        Refusal::RateLimited => "too many requests".to_string(),
    }
}

fn basic_login(credentials: Option<&DockerCredentials>) -> Option<(&str, &str)> {
    let credentials = credentials?;
    Some((
        credentials.username.as_deref()?,
        credentials.password.as_deref()?,
    ))
}

fn basic_header(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

#[derive(Deserialize)]
struct TokenReply {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

/// `token`, else `access_token` (the OAuth2 name some registries use instead).
pub(crate) fn parse_token(body: &[u8]) -> Result<String, String> {
    let reply: TokenReply =
        serde_json::from_slice(body).map_err(|e| format!("not a token reply: {e}"))?;
    let present = |t: &String| !t.is_empty();
    reply
        .token
        .filter(present)
        .or(reply.access_token.filter(present))
        .ok_or_else(|| "the reply has neither `token` nor `access_token`".to_string())
}

/// reqwest's own message says only "error sending request"; the causes say why.
fn chain(error: &reqwest::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_either_field() {
        assert_eq!(
            parse_token(br#"{"token":"t1","expires_in":300}"#),
            Ok("t1".into())
        );
        assert_eq!(parse_token(br#"{"access_token":"t2"}"#), Ok("t2".into()));
        assert_eq!(
            parse_token(br#"{"token":"","access_token":"t3"}"#),
            Ok("t3".into())
        );
        assert!(parse_token(br#"{"token":""}"#).is_err());
        assert!(parse_token(b"nope").is_err());
    }

    #[test]
    fn basic_headers_are_base64_of_user_and_password() {
        assert_eq!(
            basic_header("aladdin", "opensesame"),
            "Basic YWxhZGRpbjpvcGVuc2VzYW1l"
        );
        let credentials = DockerCredentials {
            username: Some("u".into()),
            password: None,
            ..Default::default()
        };
        assert_eq!(basic_login(Some(&credentials)), None);
    }
}
