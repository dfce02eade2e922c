//! What the GPU family's checks are built from: a check in that family, and the GPUs a condition
//! holds for as a sentence lists them.

use super::report::{Check, Family, Status};
use crate::gpu::report::GpuEntry;

pub(crate) fn check(
    id: &'static str,
    title: &'static str,
    status: Status,
    detail: String,
) -> Check {
    Check::new(id, Family::Gpus, title, status, detail)
}

/// GPU indices matching `pred`, joined for a sentence ("0, 3").
pub(crate) fn indices(gpus: &[&GpuEntry], pred: impl Fn(&GpuEntry) -> bool) -> String {
    gpus.iter()
        .filter(|g| pred(g))
        .map(|g| g.info.index.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
