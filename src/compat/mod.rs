//! Will this image run on this machine? Compatibility tables as data, and the verdict engine over them.

pub mod board;
pub mod cli;
pub mod data;
pub mod engine;
pub mod profile;
pub mod report;
pub mod require;
pub mod tag;
pub mod version;

pub use board::{assess, Assessment, Best, Board};
pub use data::CompatData;
pub use engine::{judge, Level, Reason, Scope, Verdict};
pub use profile::{GpuRuntime, HostGpu, HostProfile, ImageProfile, ImageSource};
pub use version::Version;
