//! GPU Performance Monitoring (GPM, Hopper and later): the per-second profiler counters a
//! GPU or MIG instance would accumulate, and their mean over the interval between two samples.
//!
//! The metric ids and units are NVML's `nvmlGpmMetricId_t` (nvml.h, as shipped in
//! NVIDIA/go-nvml `gen/nvml/nvml.h`): percentages 0-100, PCIe traffic in MiB/s.

use crate::hash::{range, tag};
use crate::workload::{Activity, Phase};

/// NVML_GPM_METRIC_GRAPHICS_UTIL: time any graphics or compute engine was busy.
pub const GPM_GRAPHICS_UTIL: u32 = 1;
/// NVML_GPM_METRIC_SM_UTIL: share of SMs that were busy.
pub const GPM_SM_UTIL: u32 = 2;
/// NVML_GPM_METRIC_SM_OCCUPANCY: active warps against the theoretical maximum.
pub const GPM_SM_OCCUPANCY: u32 = 3;
/// NVML_GPM_METRIC_INTEGER_UTIL.
pub const GPM_INTEGER_UTIL: u32 = 4;
/// NVML_GPM_METRIC_ANY_TENSOR_UTIL.
pub const GPM_ANY_TENSOR_UTIL: u32 = 5;
/// NVML_GPM_METRIC_DFMA_TENSOR_UTIL.
pub const GPM_DFMA_TENSOR_UTIL: u32 = 6;
/// NVML_GPM_METRIC_HMMA_TENSOR_UTIL.
pub const GPM_HMMA_TENSOR_UTIL: u32 = 7;
/// NVML_GPM_METRIC_DMMA_TENSOR_UTIL.
pub const GPM_DMMA_TENSOR_UTIL: u32 = 8;
/// NVML_GPM_METRIC_IMMA_TENSOR_UTIL.
pub const GPM_IMMA_TENSOR_UTIL: u32 = 9;
/// NVML_GPM_METRIC_DRAM_BW_UTIL: DRAM bandwidth used against the theoretical maximum.
pub const GPM_DRAM_BW_UTIL: u32 = 10;
/// NVML_GPM_METRIC_FP64_UTIL.
pub const GPM_FP64_UTIL: u32 = 11;
/// NVML_GPM_METRIC_FP32_UTIL.
pub const GPM_FP32_UTIL: u32 = 12;
/// NVML_GPM_METRIC_FP16_UTIL.
pub const GPM_FP16_UTIL: u32 = 13;
/// NVML_GPM_METRIC_PCIE_TX_PER_SEC, MiB/s.
pub const GPM_PCIE_TX_PER_SEC: u32 = 20;
/// NVML_GPM_METRIC_PCIE_RX_PER_SEC, MiB/s.
pub const GPM_PCIE_RX_PER_SEC: u32 = 21;
/// NVML_GPM_METRIC_MAX in nvml.h 13.x: ids are below it.
pub const GPM_METRIC_MAX: u32 = 333;

/// GPM metrics of a GPU or MIG instance over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimGpm {
    pub graphics_util: f64,
    pub sm_util: f64,
    pub sm_occupancy: f64,
    pub integer_util: f64,
    pub any_tensor_util: f64,
    pub hmma_tensor_util: f64,
    pub imma_tensor_util: f64,
    pub dram_bw_util: f64,
    pub fp32_util: f64,
    pub fp16_util: f64,
    pub pcie_tx_mib_s: f64,
    pub pcie_rx_mib_s: f64,
}

impl SimGpm {
    /// The value of NVML metric `id`; None for the ids the simulator does not model (NVDEC,
    /// NVJPG, NVOFA, NVLink, C2C and later additions). DFMA, DMMA and FP64 read 0: the
    /// simulated jobs do no double-precision math.
    pub fn metric(&self, id: u32) -> Option<f64> {
        Some(match id {
            GPM_GRAPHICS_UTIL => self.graphics_util,
            GPM_SM_UTIL => self.sm_util,
            GPM_SM_OCCUPANCY => self.sm_occupancy,
            GPM_INTEGER_UTIL => self.integer_util,
            GPM_ANY_TENSOR_UTIL => self.any_tensor_util,
            GPM_HMMA_TENSOR_UTIL => self.hmma_tensor_util,
            GPM_IMMA_TENSOR_UTIL => self.imma_tensor_util,
            GPM_DFMA_TENSOR_UTIL | GPM_DMMA_TENSOR_UTIL | GPM_FP64_UTIL => 0.0,
            GPM_DRAM_BW_UTIL => self.dram_bw_util,
            GPM_FP32_UTIL => self.fp32_util,
            GPM_FP16_UTIL => self.fp16_util,
            GPM_PCIE_TX_PER_SEC => self.pcie_tx_mib_s,
            GPM_PCIE_RX_PER_SEC => self.pcie_rx_mib_s,
            _ => return None,
        })
    }

    /// The SM figures scaled by `r` (what is left when some of the work ended).
    pub(crate) fn scaled(self, r: f64) -> SimGpm {
        SimGpm {
            graphics_util: self.graphics_util * r,
            sm_util: self.sm_util * r,
            sm_occupancy: self.sm_occupancy * r,
            integer_util: self.integer_util * r,
            any_tensor_util: self.any_tensor_util * r,
            hmma_tensor_util: self.hmma_tensor_util * r,
            imma_tensor_util: self.imma_tensor_util * r,
            dram_bw_util: self.dram_bw_util * r,
            fp32_util: self.fp32_util * r,
            fp16_util: self.fp16_util * r,
            ..self
        }
    }

    /// `self + other * w`, with the memory-bus figure weighted by `mem_w` and PCIe summed.
    pub(crate) fn add(&mut self, other: &SimGpm, w: f64, mem_w: f64) {
        self.graphics_util += other.graphics_util * w;
        self.sm_util += other.sm_util * w;
        self.sm_occupancy += other.sm_occupancy * w;
        self.integer_util += other.integer_util * w;
        self.any_tensor_util += other.any_tensor_util * w;
        self.hmma_tensor_util += other.hmma_tensor_util * w;
        self.imma_tensor_util += other.imma_tensor_util * w;
        self.dram_bw_util += other.dram_bw_util * mem_w;
        self.fp32_util += other.fp32_util * w;
        self.fp16_util += other.fp16_util * w;
        self.pcie_tx_mib_s += other.pcie_tx_mib_s;
        self.pcie_rx_mib_s += other.pcie_rx_mib_s;
    }
}

/// The counters of one second of `act`. Utilisation counts a kernel on one SM as busy; GPM
/// sees how many SMs, warps and tensor cores the kernels keep busy: nearly all SMs in steady
/// training, fewer while serving small batches, few during a launch or a checkpoint.
pub(crate) fn second_metrics(seed: u64, key: u64, s: i64, act: &Activity) -> SimGpm {
    if !act.active {
        return SimGpm::default();
    }
    let r = |k: u64, lo: f64, hi: f64| range(seed, &[tag::GPM, key, s as u64, k], lo, hi);
    let (fill, occupancy, tensor) = match act.phase {
        Phase::Steady => (r(1, 0.93, 0.99), r(2, 0.40, 0.55), r(3, 0.58, 0.72)),
        Phase::Eval => (r(1, 0.85, 0.95), r(2, 0.30, 0.45), r(3, 0.42, 0.55)),
        Phase::DataLoad => (r(1, 0.70, 0.85), r(2, 0.25, 0.40), r(3, 0.30, 0.45)),
        Phase::Warmup => (r(1, 0.80, 0.95), r(2, 0.30, 0.45), r(3, 0.35, 0.55)),
        Phase::Serving => (r(1, 0.55, 0.80), r(2, 0.18, 0.32), r(3, 0.30, 0.50)),
        Phase::Launch | Phase::Checkpoint | Phase::Idle => {
            (r(1, 0.20, 0.45), r(2, 0.10, 0.25), r(3, 0.02, 0.10))
        }
    };
    let graphics = act.util * 100.0;
    let sm = graphics * fill;
    let tensor = sm * tensor;
    SimGpm {
        graphics_util: graphics,
        sm_util: sm,
        sm_occupancy: sm * occupancy,
        integer_util: sm * r(4, 0.15, 0.25),
        any_tensor_util: tensor,
        hmma_tensor_util: tensor * 0.97,
        imma_tensor_util: if act.phase == Phase::Serving {
            tensor * 0.03
        } else {
            0.0
        },
        dram_bw_util: act.mem_util * 100.0 * r(5, 0.85, 0.95),
        fp32_util: sm * r(6, 0.12, 0.22),
        fp16_util: sm * r(7, 0.08, 0.15),
        // The NVML PCIe throughput counters are in KB/s.
        pcie_tx_mib_s: act.tx_kbps / 1024.0,
        pcie_rx_mib_s: act.rx_kbps / 1024.0,
    }
}

/// The whole seconds an interval between two samples covers: every second from the first
/// sample's to the one before the second sample's, or the one second both were taken in.
/// Long intervals are visited with a stride, at most 3600 seconds.
pub(crate) fn interval_seconds(s1: i64, s2: i64) -> impl Iterator<Item = i64> {
    let (lo, hi) = (s1.min(s2), s1.max(s2));
    let hi = hi.max(lo + 1);
    let stride = ((hi - lo) as u64).div_ceil(3600).max(1) as usize;
    (lo..hi).step_by(stride)
}

/// The mean of `per_second` over `seconds`.
pub(crate) fn mean(
    seconds: impl Iterator<Item = i64>,
    per_second: impl Fn(i64) -> SimGpm,
) -> SimGpm {
    let mut sum = SimGpm::default();
    let mut n = 0.0;
    for s in seconds {
        sum.add(&per_second(s), 1.0, 1.0);
        n += 1.0;
    }
    if n == 0.0 {
        return sum;
    }
    let mut out = sum.scaled(1.0 / n);
    out.pcie_tx_mib_s /= n;
    out.pcie_rx_mib_s /= n;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_covers_its_seconds_or_the_one_it_sits_in() {
        assert_eq!(
            interval_seconds(10, 13).collect::<Vec<_>>(),
            vec![10, 11, 12]
        );
        assert_eq!(
            interval_seconds(13, 10).collect::<Vec<_>>(),
            vec![10, 11, 12]
        );
        assert_eq!(interval_seconds(7, 7).collect::<Vec<_>>(), vec![7]);
        assert!(interval_seconds(0, 1_000_000).count() <= 3600);
    }

    #[test]
    fn the_mean_divides_every_figure() {
        let one = SimGpm {
            sm_util: 40.0,
            pcie_rx_mib_s: 10.0,
            dram_bw_util: 20.0,
            ..SimGpm::default()
        };
        let m = mean(0..4, |s| if s < 2 { one } else { SimGpm::default() });
        assert_eq!(
            (m.sm_util, m.pcie_rx_mib_s, m.dram_bw_util),
            (20.0, 5.0, 10.0)
        );
    }
}
