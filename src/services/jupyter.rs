//! JupyterLab's REST API as a notebook service is looked at through it: `/api/status` (is it
//! up, does it want the token) and `/api/kernels` (each kernel's state and last activity).

use serde::Deserialize;

/// One kernel, as `/api/kernels` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Kernel {
    pub id: String,
    /// The kernel spec's name, e.g. `python3`.
    pub name: String,
    /// `idle`, `busy`, `starting`, ...
    pub execution_state: String,
    /// Unix ms of its last message, when Jupyter says.
    pub last_activity_ms: Option<u64>,
    /// Open connections (browser tabs) to it.
    pub connections: u32,
}

#[derive(Deserialize)]
struct RawKernel {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    execution_state: String,
    #[serde(default)]
    last_activity: Option<String>,
    #[serde(default)]
    connections: u32,
}

/// The kernels of `/api/kernels`' body.
pub fn parse_kernels(body: &str) -> Result<Vec<Kernel>, String> {
    let raw: Vec<RawKernel> =
        serde_json::from_str(body).map_err(|e| format!("the kernel list is not JSON: {e}"))?;
    Ok(raw
        .into_iter()
        .map(|k| Kernel {
            last_activity_ms: k.last_activity.as_deref().and_then(unix_ms),
            id: k.id,
            name: k.name,
            execution_state: k.execution_state,
            connections: k.connections,
        })
        .collect())
}

fn unix_ms(text: &str) -> Option<u64> {
    let ts: jiff::Timestamp = text.parse().ok()?;
    u64::try_from(ts.as_millisecond()).ok()
}

/// Since when every kernel has been idle (the latest last activity among them): `None` when
/// there is no kernel, one is working (busy, restarting), or one's last activity is unknown.
/// A kernel no browser has connected to stays `starting` in Jupyter's list however long it
/// waits: it computes nothing, so it counts as idle since its last message.
pub fn idle_since_ms(kernels: &[Kernel]) -> Option<u64> {
    let working = |k: &Kernel| !matches!(k.execution_state.as_str(), "idle" | "starting");
    if kernels.is_empty() || kernels.iter().any(working) {
        return None;
    }
    kernels
        .iter()
        .map(|k| k.last_activity_ms)
        .collect::<Option<Vec<u64>>>()?
        .into_iter()
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"[
      {"id": "a1", "name": "python3", "last_activity": "2026-11-25T10:00:00.000000Z",
       "execution_state": "idle", "connections": 1},
      {"id": "b2", "name": "python3", "last_activity": "2026-11-25T10:05:00.123456Z",
       "execution_state": "idle", "connections": 0}
    ]"#;

    #[test]
    fn kernels_are_read_and_idle_since_the_latest_activity() {
        let kernels = parse_kernels(TWO).expect("valid");
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].connections, 1);
        let at = |text: &str| unix_ms(text).expect("a time");
        assert_eq!(
            kernels[0].last_activity_ms,
            Some(at("2026-11-25T10:00:00Z"))
        );
        assert_eq!(
            idle_since_ms(&kernels),
            Some(at("2026-11-25T10:05:00.123Z"))
        );
    }

    #[test]
    fn a_busy_kernel_or_none_at_all_is_not_idle() {
        let mut kernels = parse_kernels(TWO).expect("valid");
        kernels[1].execution_state = "starting".into();
        assert!(
            idle_since_ms(&kernels).is_some(),
            "waiting for a browser is not working"
        );
        kernels[1].execution_state = "busy".into();
        assert_eq!(idle_since_ms(&kernels), None);
        kernels[1].execution_state = "restarting".into();
        assert_eq!(idle_since_ms(&kernels), None);
        assert_eq!(idle_since_ms(&[]), None);
        assert!(parse_kernels("<html>").is_err());
    }
}
