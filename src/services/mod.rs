//! Services: JupyterLab, TensorBoard and NVIDIA Triton Inference Server run as detached gpudeck
//! runs (`RunSpec.service`), each on loopback ports: their command lines, and what their HTTP
//! answers say (kernels and idleness, models, readiness, inference statistics).

pub mod jupyter;
pub mod probe;
pub mod tensorboard;
pub mod triton;
