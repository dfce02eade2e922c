//! An HTTP GET or POST to a service on loopback (reqwest, no proxy), with errors in words.

use std::time::Duration;

/// How long one look at a service may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The client every look uses: loopback only, so never through a proxy (`HTTP_PROXY` would
/// otherwise capture 127.0.0.1).
pub fn client() -> Result<reqwest::Client, String> {
    // reqwest is built without a TLS provider of its own; gpudeck's is ring (plain HTTP here,
    // but the builder asks for one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(TIMEOUT)
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))
}

/// GETs `url` (with Jupyter's `Authorization: token T` when given); the status and body, or
/// why nothing came back.
pub async fn get(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<(u16, String), String> {
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("token {token}"));
    }
    answer(request.send().await).await
}

/// DELETEs `url` with Jupyter's token (shutting a kernel down).
pub async fn delete(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<(u16, String), String> {
    let mut request = client.delete(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("token {token}"));
    }
    answer(request.send().await).await
}

/// POSTs an empty JSON object to `url` (Triton's repository index is a POST).
pub async fn post(client: &reqwest::Client, url: &str) -> Result<(u16, String), String> {
    let request = client
        .post(url)
        .header("Content-Type", "application/json")
        .body("{}");
    answer(request.send().await).await
}

async fn answer(sent: reqwest::Result<reqwest::Response>) -> Result<(u16, String), String> {
    let response = sent.map_err(|e| in_words(&e))?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| in_words(&e))?;
    Ok((status, body))
}

fn in_words(e: &reqwest::Error) -> String {
    if e.is_connect() {
        "nothing listens on its port (still starting, or it has stopped)".into()
    } else if e.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs())
    } else {
        e.to_string()
    }
}
