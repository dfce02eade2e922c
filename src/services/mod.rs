//! Services: JupyterLab (`gpudeck notebook`), TensorBoard (`gpudeck tensorboard`) and NVIDIA
//! Triton Inference Server (`gpudeck triton`) on chosen GPUs. Each is a run whose spec has a
//! `service` part (`runs::ServiceSpec`): started, claimed, supervised, logged and stopped by the
//! run machinery, in a container of a local image or on this machine, listening on 127.0.0.1
//! only. This module turns a request into that spec (`launch`) and looks at running services
//! over HTTP (`listing`, `jupyter`, `triton`, `probe`); `collector` does so for the dashboard.

pub mod collector;
pub mod error;
pub mod gpu_use;
pub mod idle;
pub mod jupyter;
pub mod keeper;
pub mod launch;
pub mod listing;
pub mod owner;
pub mod probe;
pub mod tensorboard;
pub mod triton;

pub use collector::{ServicesCommand, ServicesHandle, ServicesUpdate};
pub use error::ServiceError;
pub use idle::{idle_check, IDLE_CHECK};
pub use launch::{service_spec, Placement, ServiceRequest};
pub use listing::{
    look_at_all, look_blocking, row_of, services_of, Health, ServiceRow, SERVICES_SCHEMA,
};
