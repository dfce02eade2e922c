//! HTTP to a service on loopback: one GET or POST with a short timeout, never through a proxy,
//! and errors that say what failed (nothing listening yet, closed, too slow, an HTTP status).

use std::error::Error as _;
use std::time::{Duration, Instant};

/// How long one request may take. A service on loopback answers in milliseconds; one that
/// takes seconds is stuck (or starting), which the caller polls through.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// How often [`wait_ready`] asks again.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// What a probe could not do, in words a status line can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("nothing is listening at {url} (not started yet, or stopped)")]
    Refused { url: String },
    #[error("{url} closed the connection before answering")]
    Closed { url: String },
    #[error("{url} did not answer in time")]
    Timeout { url: String },
    #[error("{url} answered HTTP {status}{}", detail_suffix(body))]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url} could not be asked: {detail}")]
    Failed { url: String, detail: String },
    #[error("the HTTP client could not be set up: {0}")]
    Client(String),
}

fn detail_suffix(body: &str) -> String {
    let body = body.trim();
    match body.is_empty() {
        true => String::new(),
        false => format!(": {}", body.chars().take(200).collect::<String>()),
    }
}

/// One HTTP answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub url: String,
    pub status: u16,
    pub body: String,
}

impl Answer {
    /// The body of a 2xx answer; any other status is an error that quotes the body.
    pub fn success(self) -> Result<String, ProbeError> {
        match (200..300).contains(&self.status) {
            true => Ok(self.body),
            false => Err(ProbeError::Status {
                url: self.url,
                status: self.status,
                body: self.body,
            }),
        }
    }
}

/// A client for loopback services: no proxy (an `HTTP_PROXY` in the environment must not
/// capture 127.0.0.1), a short timeout ([`REQUEST_TIMEOUT`]), and no idle connection kept:
/// tritonserver, told to stop, waits for every open HTTP connection (up to its
/// `--exit-timeout-secs`, 30 s) and then exits with status 1, so a kept-alive probe connection
/// would hold a service's stop for half a minute. A new connection on loopback costs nothing.
pub fn client() -> Result<reqwest::Client, ProbeError> {
    client_with_timeout(REQUEST_TIMEOUT)
}

/// [`client`] with another timeout per request.
pub fn client_with_timeout(timeout: Duration) -> Result<reqwest::Client, ProbeError> {
    // reqwest's rustls needs a process-wide provider even for plain HTTP; ring is the one the
    // rest of gpudeck uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| ProbeError::Client(crate::output::with_causes(&e)))
}

/// GETs `url`, with a Jupyter-style `Authorization: token T` header when a token is given.
pub async fn get(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<Answer, ProbeError> {
    send(client.get(url), url, token).await
}

/// DELETEs `url` (a Jupyter kernel), with the token when given.
pub async fn delete(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<Answer, ProbeError> {
    send(client.delete(url), url, token).await
}

/// POSTs `body` (JSON) to `url`; Triton's repository index and inference, a Jupyter kernel.
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    body: &str,
) -> Result<Answer, ProbeError> {
    let request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    send(request, url, token).await
}

async fn send(
    request: reqwest::RequestBuilder,
    url: &str,
    token: Option<&str>,
) -> Result<Answer, ProbeError> {
    let request = match token {
        Some(token) => request.header(reqwest::header::AUTHORIZATION, format!("token {token}")),
        None => request,
    };
    let response = request.send().await.map_err(|e| classify(url, &e))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| classify(url, &e))?;
    Ok(Answer {
        url: url.to_string(),
        status,
        body,
    })
}

/// GETs `url` until it answers 2xx or `timeout` has passed; then the last error says why it
/// never did (still refused, a 403, a 400 from a server whose models are not ready).
pub async fn wait_ready(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<String, ProbeError> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match get(client, url, token).await {
            Ok(answer) => match answer.success() {
                Ok(body) => return Ok(body),
                Err(e) => e,
            },
            Err(e) => e,
        };
        if Instant::now() + POLL_INTERVAL > deadline {
            return Err(last);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Names what went wrong from the error's causes: refused and reset connections are I/O errors
/// deep in the chain, a connection closed mid-answer is hyper's incomplete message.
fn classify(url: &str, e: &reqwest::Error) -> ProbeError {
    let url = url.to_string();
    if e.is_timeout() {
        return ProbeError::Timeout { url };
    }
    let mut source = e.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionRefused => return ProbeError::Refused { url },
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                    return ProbeError::Closed { url }
                }
                _ => {}
            }
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() {
                return ProbeError::Closed { url };
            }
        }
        source = cause.source();
    }
    ProbeError::Failed {
        url,
        detail: crate::output::with_causes(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A one-connection server on loopback: reads the request, then does `then` with the socket.
    /// Returns its URL and the request's text.
    async fn serve_once<F, Fut>(then: F) -> (String, tokio::task::JoinHandle<String>)
    where
        F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/api/status", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client closed before its request ended");
                request.extend_from_slice(&buf[..n]);
            }
            then(socket).await;
            String::from_utf8(request).unwrap()
        });
        (url, task)
    }

    fn respond(
        status: &'static str,
        body: &'static str,
    ) -> impl FnOnce(
        tokio::net::TcpStream,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        move |mut socket| {
            Box::pin(async move {
                let text = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                socket.write_all(text.as_bytes()).await.unwrap();
            })
        }
    }

    #[tokio::test]
    async fn a_get_sends_the_token_header_and_returns_status_and_body() {
        let (url, server) = serve_once(respond("200 OK", "{\"kernels\": 0}")).await;
        let answer = get(&client().unwrap(), &url, Some("s3cret")).await.unwrap();
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, "{\"kernels\": 0}")
        );
        let request = server.await.unwrap().to_ascii_lowercase();
        assert!(request.starts_with("get /api/status http/1.1"), "{request}");
        assert!(
            request.contains("authorization: token s3cret\r\n"),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_post_sends_its_json_body_without_a_token_when_none_is_given() {
        let (url, server) = serve_once(respond("200 OK", "[]")).await;
        let answer = post(&client().unwrap(), &url, None, "{}").await.unwrap();
        assert_eq!(answer.success().unwrap(), "[]");
        let request = server.await.unwrap().to_ascii_lowercase();
        assert!(request.starts_with("post /api/status"), "{request}");
        assert!(
            request.contains("content-type: application/json"),
            "{request}"
        );
        assert!(request.ends_with("\r\n\r\n{}"), "{request}");
        assert!(!request.contains("authorization"), "{request}");
    }

    #[tokio::test]
    async fn a_status_outside_2xx_is_an_error_that_quotes_the_body() {
        let (url, _server) =
            serve_once(respond("403 Forbidden", "{\"message\": \"Forbidden\"}")).await;
        let answer = get(&client().unwrap(), &url, None).await.unwrap();
        assert_eq!(answer.status, 403);
        let err = answer.success().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{url} answered HTTP 403: {{\"message\": \"Forbidden\"}}")
        );
    }

    #[tokio::test]
    async fn a_port_nobody_listens_on_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        drop(listener);
        let err = get(&client().unwrap(), &url, None).await.unwrap_err();
        assert_eq!(err, ProbeError::Refused { url: url.clone() });
        assert!(err.to_string().contains("nothing is listening"), "{err}");
    }

    #[tokio::test]
    async fn a_server_that_hangs_up_without_answering_closed_the_connection() {
        let (url, _server) = serve_once(|socket| async move { drop(socket) }).await;
        let err = get(&client().unwrap(), &url, None).await.unwrap_err();
        assert_eq!(err, ProbeError::Closed { url });
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let (url, _server) = serve_once(|socket| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(socket);
        })
        .await;
        let client = client_with_timeout(Duration::from_millis(200)).unwrap();
        let err = get(&client, &url, None).await.unwrap_err();
        assert_eq!(err, ProbeError::Timeout { url });
    }

    #[tokio::test]
    async fn waiting_for_readiness_gives_the_last_reason_when_it_never_comes() {
        let (url, _server) = serve_once(respond("400 Bad Request", "")).await;
        let err = wait_ready(&client().unwrap(), &url, None, Duration::from_millis(500))
            .await
            .unwrap_err();
        // The first answer was a 400; the server then stopped, so the last word is a refusal.
        assert_eq!(err, ProbeError::Refused { url });
    }
}
