//! The GPUs and Topology tabs' state: where the GPU data stands, the latest samples and their
//! history, the Xids seen, and the next row graph.

use crate::config::GraphMetric;
use crate::gpu::history::GpuHistory;
use crate::gpu::xid_watch::XidLog;
use crate::gpu::{GpuError, GpuSample, Inventory};

/// Where the GPU data stands.
#[derive(Clone, Debug)]
pub enum GpuStatus {
    Loading,
    Failed(GpuError),
    Ready(Box<GpuData>),
}

/// GPU facts, the latest samples and their history.
#[derive(Clone, Debug)]
pub struct GpuData {
    pub inventory: Inventory,
    pub samples: Vec<GpuSample>,
    pub history: Vec<GpuHistory>,
    /// The Xids each GPU reported while the dashboard ran.
    pub xids: XidLog,
}

/// The row graph after `g` (`m` cycles them).
pub fn next_graph(g: GraphMetric) -> GraphMetric {
    match g {
        GraphMetric::Utilization => GraphMetric::Memory,
        GraphMetric::Memory => GraphMetric::Power,
        GraphMetric::Power => GraphMetric::Utilization,
    }
}

/// `current` moved by `delta` rows, kept inside a list of `len`.
pub fn offset(current: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let target = current as isize + delta;
    target.clamp(0, len as isize - 1) as usize
}
