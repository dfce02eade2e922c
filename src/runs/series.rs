//! A bounded series of (x, y) points evenly downsampled over its whole length: a run's history
//! in memory that stays flat however long the run goes.

/// Points of one quantity. When full it halves (keeping every second point) and doubles `stride`,
/// the number of values each new point stands for; the newest point is overwritten until its
/// stride is complete, so the last point is always the latest value.
#[derive(Clone, Debug)]
pub struct Series {
    points: Vec<(f64, f64)>,
    stride: u64,
    filled: u64,
}

impl Default for Series {
    fn default() -> Self {
        Self {
            points: Vec::new(),
            stride: 1,
            filled: 0,
        }
    }
}

impl Series {
    /// The points, oldest first.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Adds the newest point, keeping at most `cap` (even) points.
    pub fn push(&mut self, cap: usize, point: (f64, f64)) {
        if self.filled > 0 {
            if let Some(last) = self.points.last_mut() {
                *last = point;
            }
            self.filled += 1;
        } else {
            if self.points.len() >= cap {
                self.halve();
            }
            self.points.push(point);
            self.filled = 1;
        }
        if self.filled >= self.stride {
            self.filled = 0;
        }
    }

    fn halve(&mut self) {
        let kept = self.points.len() / 2;
        for i in 0..kept {
            self.points[i] = self.points[2 * i + 1];
        }
        self.points.truncate(kept);
        self.stride = self.stride.saturating_mul(2);
    }
}
