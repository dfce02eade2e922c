//! Bounded per-GPU metric history: ring buffers whose memory never grows with uptime.

use std::collections::VecDeque;

use super::types::{GpuSample, GpuStatic};

/// A fixed-capacity ring of values; the oldest value falls off when full.
#[derive(Clone, Debug)]
pub struct Ring {
    values: VecDeque<Option<f32>>,
    capacity: usize,
}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(2);
        Self {
            values: VecDeque::with_capacity(capacity),
            capacity,
        }
    }

    /// Appends a value; `None` records a gap (metric unreadable at that tick).
    pub fn push(&mut self, value: Option<f32>) {
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(value);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Option<f32>> + ExactSizeIterator + '_ {
        self.values.iter().copied()
    }

    /// The most recent `n` values, oldest first.
    pub fn last_n(&self, n: usize) -> impl Iterator<Item = Option<f32>> + '_ {
        self.values
            .iter()
            .skip(self.len().saturating_sub(n))
            .copied()
    }

    /// Mean of the readable values, for summaries.
    pub fn mean(&self) -> Option<f32> {
        let (sum, n) = self
            .values
            .iter()
            .flatten()
            .fold((0.0f32, 0u32), |(s, n), v| (s + v, n + 1));
        (n > 0).then(|| sum / n as f32)
    }
}

/// The graphs' data for one GPU.
#[derive(Clone, Debug)]
pub struct GpuHistory {
    pub util: Ring,
    pub memory_pct: Ring,
    pub power_w: Ring,
}

impl GpuHistory {
    pub fn new(capacity: usize) -> Self {
        Self {
            util: Ring::new(capacity),
            memory_pct: Ring::new(capacity),
            power_w: Ring::new(capacity),
        }
    }

    pub fn record(&mut self, gpu: &GpuStatic, sample: &GpuSample) {
        self.util.push(sample.util_gpu_pct.map(|u| u as f32));
        let mem = match (sample.memory_used_bytes, gpu.memory_total_bytes) {
            (Some(used), Some(total)) if total > 0 => {
                Some((used as f64 / total as f64 * 100.0) as f32)
            }
            _ => None,
        };
        self.memory_pct.push(mem);
        self.power_w.push(sample.power_w.map(|p| p as f32));
    }
}

/// How many samples cover `history_secs` at `refresh_ms` per sample.
pub fn capacity_for(history_secs: u64, refresh_ms: u64) -> usize {
    let refresh_ms = refresh_ms.max(1);
    usize::try_from(history_secs.saturating_mul(1000) / refresh_ms)
        .unwrap_or(usize::MAX)
        .max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_drops_the_oldest_when_full() {
        let mut r = Ring::new(3);
        for v in 0..10 {
            r.push(Some(v as f32));
        }
        assert_eq!(r.len(), 3);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            vec![Some(7.0), Some(8.0), Some(9.0)]
        );
        assert_eq!(r.last_n(2).collect::<Vec<_>>(), vec![Some(8.0), Some(9.0)]);
    }

    #[test]
    fn mean_skips_gaps() {
        let mut r = Ring::new(4);
        r.push(Some(10.0));
        r.push(None);
        r.push(Some(30.0));
        assert_eq!(r.mean(), Some(20.0));
        assert_eq!(Ring::new(4).mean(), None);
    }

    #[test]
    fn ten_minutes_at_one_second_is_600_samples() {
        assert_eq!(capacity_for(600, 1000), 600);
        assert_eq!(capacity_for(600, 100), 6000);
    }
}
