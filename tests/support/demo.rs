//! App state filled from the in-process simulation, for state and panel tests.

use std::sync::Arc;

use gpudeck::app::state::AppState;
use gpudeck::config::Config;
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::report;
use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::GpuSource;
use gpudeck::host::ProcessTable;
use gpudeck_sim_model::SimSpec;

/// An app state that has seen `ticks` samples of the simulation `spec` (time frozen, so deterministic).
pub fn demo_state(spec: &str, ticks: usize) -> AppState {
    let mut state = AppState::new(&Config::default(), "testhost".into(), false);
    feed(&mut state, spec, ticks);
    state
}

pub fn feed(state: &mut AppState, spec: &str, ticks: usize) {
    let spec = SimSpec::parse(spec).expect("valid spec");
    let mut source = SimSource::new(spec);
    let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
    let inventory = source.inventory().expect("inventory");
    state.apply_gpu(GpuUpdate::Ready(Box::new(inventory)));
    for _ in 0..ticks {
        let r = report::collect(&mut source as &mut dyn GpuSource, &table, "testhost".into());
        state.apply_gpu(GpuUpdate::Sampled(
            r.gpus.into_iter().map(|g| g.sample).collect(),
        ));
    }
}
