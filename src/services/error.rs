//! What can go wrong with a service before or besides its run, in words, with what to do.

use std::path::PathBuf;

use thiserror::Error;

use crate::runs::RunError;

#[derive(Debug, Error)]
pub enum ServiceError {
    /// Starting, stopping or reading its run failed.
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{what} is not installed on this machine (`{program}` is not on PATH)")]
    ProgramMissing {
        what: &'static str,
        program: &'static str,
        install: &'static str,
    },
    #[error("no image was named and --host was not given: a {kind} runs in a container of a local image, or with --host on this machine")]
    NoImageNoHost {
        kind: &'static str,
        /// What to type for each way, for this kind.
        ways: Vec<String>,
    },
    #[error("--host and an image were both given: a {kind} runs either in a container of that image or on this machine")]
    HostAndImage { kind: &'static str },
    #[error("port {port} on 127.0.0.1 cannot be used: {why}")]
    PortBusy { port: u16, why: String },
    #[error("{path} cannot be served: {why}")]
    BadTarget { path: PathBuf, why: String },
    #[error("{what} is not a run id or name, nor a directory: {why}")]
    UnknownTarget { what: String, why: String },
    #[error("no free TCP port on 127.0.0.1: {why}")]
    NoFreePort { why: String },
    #[error("no token could be made for the notebook: {why}")]
    NoToken { why: String },
    #[error("the tritonserver on this machine cannot be used: {why}")]
    TritonSetup { why: String },
}

impl ServiceError {
    /// What the user can do about it.
    pub fn fix(&self) -> String {
        match self {
            ServiceError::Run(e) => e.fix(),
            ServiceError::ProgramMissing { install, .. } => (*install).to_string(),
            ServiceError::NoImageNoHost { ways, .. } => ways.join("\n"),
            ServiceError::HostAndImage { .. } => {
                "Drop the image to run it on this machine, or drop --host to run it in the image.".into()
            }
            ServiceError::PortBusy { .. } => {
                "Pick another port with --port, or leave --port out for a free one.".into()
            }
            ServiceError::BadTarget { .. } => "Pass an existing directory.".into(),
            ServiceError::UnknownTarget { .. } => {
                "Pass a run id or name as `gpudeck runs` lists them, or a directory of TensorBoard logs.".into()
            }
            ServiceError::NoFreePort { .. } => {
                "Check that the loopback interface is up (`ip addr show lo`).".into()
            }
            ServiceError::NoToken { .. } => "Check that /dev/urandom can be read.".into(),
            ServiceError::TritonSetup { .. } => {
                "Reinstall it (`pip install nvidia-pytriton` in your environment), or run Triton in NVIDIA's image with --image.".into()
            }
        }
    }

    /// Whether it is a mistake in the command line (exit code 2) rather than a failure.
    pub fn is_usage(&self) -> bool {
        match self {
            ServiceError::Run(e) => e.is_usage(),
            ServiceError::NoImageNoHost { .. } | ServiceError::HostAndImage { .. } => true,
            _ => false,
        }
    }
}
