//! The per-GPU gauge families: each one's name, help text and where its value comes from.

use crate::gpu::{GpuSample, GpuStatic};

/// A per-GPU family with one value per GPU, absent when NVML could not read it.
pub(super) struct GpuGauge {
    pub name: &'static str,
    pub help: &'static str,
    pub value: fn(&GpuStatic, &GpuSample) -> Option<f64>,
}

const MHZ: f64 = 1e6;

fn ratio(pct: Option<u32>) -> Option<f64> {
    pct.map(|p| f64::from(p) / 100.0)
}

pub(super) const GPU_GAUGES: &[GpuGauge] = &[
    GpuGauge {
        name: "gpudeck_gpu_utilization_ratio",
        help: "Fraction of the last sample period in which a kernel ran on the GPU (0-1).",
        value: |_, s| ratio(s.util_gpu_pct),
    },
    GpuGauge {
        name: "gpudeck_gpu_memory_utilization_ratio",
        help:
            "Fraction of the last sample period in which device memory was read or written (0-1).",
        value: |_, s| ratio(s.util_mem_pct),
    },
    GpuGauge {
        name: "gpudeck_gpu_memory_used_bytes",
        help: "Device memory in use, in bytes.",
        value: |_, s| s.memory_used_bytes.map(|b| b as f64),
    },
    GpuGauge {
        name: "gpudeck_gpu_memory_total_bytes",
        help: "Device memory in total, in bytes.",
        value: |g, _| g.memory_total_bytes.map(|b| b as f64),
    },
    GpuGauge {
        name: "gpudeck_gpu_power_watts",
        help: "Power draw, in watts.",
        value: |_, s| s.power_w,
    },
    GpuGauge {
        name: "gpudeck_gpu_power_limit_watts",
        help: "Enforced power limit, in watts.",
        value: |_, s| s.power_limit_w,
    },
    GpuGauge {
        name: "gpudeck_gpu_temperature_celsius",
        help: "GPU die temperature, in degrees Celsius.",
        value: |_, s| s.temp_c.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_temperature_slowdown_celsius",
        help: "Temperature at which the GPU slows itself down, in degrees Celsius.",
        value: |g, _| g.temp_slowdown_c.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_sm_clock_hertz",
        help: "SM clock, in hertz.",
        value: |_, s| s.sm_clock_mhz.map(|c| f64::from(c) * MHZ),
    },
    GpuGauge {
        name: "gpudeck_gpu_sm_clock_max_hertz",
        help: "Highest SM clock, in hertz.",
        value: |g, _| g.sm_clock_max_mhz.map(|c| f64::from(c) * MHZ),
    },
    GpuGauge {
        name: "gpudeck_gpu_memory_clock_hertz",
        help: "Memory clock, in hertz.",
        value: |_, s| s.mem_clock_mhz.map(|c| f64::from(c) * MHZ),
    },
    GpuGauge {
        name: "gpudeck_gpu_memory_clock_max_hertz",
        help: "Highest memory clock, in hertz.",
        value: |g, _| g.mem_clock_max_mhz.map(|c| f64::from(c) * MHZ),
    },
    GpuGauge {
        name: "gpudeck_gpu_fan_speed_ratio",
        help: "Fan speed as a fraction of its maximum (0-1).",
        value: |_, s| ratio(s.fan_pct),
    },
    GpuGauge {
        name: "gpudeck_gpu_performance_state",
        help: "Performance state: 0 (P0, fastest) to 15 (P15, slowest).",
        value: |_, s| s.pstate.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_pcie_link_generation",
        help: "Current PCIe link generation.",
        value: |_, s| s.pcie_gen.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_pcie_link_generation_max",
        help: "Highest PCIe link generation of the GPU and its slot.",
        value: |g, _| g.pcie_gen_max.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_pcie_link_width",
        help: "Current PCIe link width, in lanes.",
        value: |_, s| s.pcie_width.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_pcie_link_width_max",
        help: "Widest PCIe link of the GPU and its slot, in lanes.",
        value: |g, _| g.pcie_width_max.map(f64::from),
    },
    GpuGauge {
        name: "gpudeck_gpu_remapped_rows_pending",
        help: "1 when a memory row remapping waits for the next GPU reset.",
        value: |_, s| s.remapped_rows.map(|r| bool_value(r.pending)),
    },
    GpuGauge {
        name: "gpudeck_gpu_remapped_rows_failed",
        help: "1 when a memory row remapping failed (no spare row left).",
        value: |_, s| s.remapped_rows.map(|r| bool_value(r.failure)),
    },
];

pub(super) fn bool_value(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}
