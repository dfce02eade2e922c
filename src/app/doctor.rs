//! The Doctor tab's state: the latest diagnosis, whether one is running, and the selected check.

use crate::doctor::{Check, DoctorReport};

/// The diagnosis on screen.
#[derive(Clone, Debug, Default)]
pub struct DoctorView {
    pub report: Option<DoctorReport>,
    pub running: bool,
    pub selected: usize,
    /// Unix seconds when the shown report was made.
    pub made_at: Option<i64>,
    /// How far the selected check's detail is scrolled, in lines (`J`/`K`); back to its top
    /// when another check is selected. The renderer stops at the last line, and the app clamps
    /// it back to that each frame.
    pub detail_scroll: usize,
}

impl DoctorView {
    pub fn selected_check(&self) -> Option<&Check> {
        self.report.as_ref()?.checks.get(self.selected)
    }

    pub fn len(&self) -> usize {
        self.report.as_ref().map_or(0, |r| r.checks.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
