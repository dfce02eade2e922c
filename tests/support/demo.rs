//! App state filled from the in-process simulation, for state and panel tests, and the facts of a
//! Docker Engine to connect it to.

use std::sync::Arc;

use gpudeck::app::state::AppState;
use gpudeck::config::Config;
use gpudeck::docker::EngineInfo;
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

/// The simulation as the dashboard's collector sees it while the Processes tab is shown: every
/// tick enriched and watched (GPU share, CPU, host memory), and kills go to the same simulation.
pub struct WatchedDemo {
    pub source: SimSource,
    pub table: Arc<dyn ProcessTable>,
    watch: gpudeck::gpu::process_watch::ProcessWatch,
    enricher: gpudeck::gpu::collector::ProcessEnricher,
    gpus: Vec<gpudeck::gpu::GpuStatic>,
}

impl WatchedDemo {
    /// A state on the Processes tab that has seen two watched samples of `spec`.
    pub fn start(spec: &str) -> (WatchedDemo, AppState) {
        let mut source = SimSource::new(SimSpec::parse(spec).expect("valid spec"));
        let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
        let inventory = source.inventory().expect("inventory");
        let mut demo = WatchedDemo {
            gpus: inventory.gpus.clone(),
            enricher: gpudeck::gpu::collector::ProcessEnricher::new(Arc::clone(&table)),
            // Time is frozen, so the simulation has one second of samples: read them once.
            watch: gpudeck::gpu::process_watch::ProcessWatch::new(std::time::Duration::from_secs(
                3600,
            )),
            source,
            table,
        };
        let mut state = AppState::new(&Config::default(), "testhost".into(), false);
        state.apply_gpu(GpuUpdate::Ready(Box::new(inventory)));
        state.update(gpudeck::app::action::Action::SelectTab(
            gpudeck::app::action::Tab::Processes,
        ));
        demo.tick(&mut state);
        demo.tick(&mut state);
        (demo, state)
    }

    /// One collector tick folded into `state`.
    pub fn tick(&mut self, state: &mut AppState) {
        let mut samples: Vec<_> = self.gpus.iter().map(|g| self.source.sample(g)).collect();
        self.enricher.enrich(&mut samples, &mut self.source);
        self.watch.apply(
            &self.gpus,
            &mut samples,
            &mut self.source,
            self.table.as_ref(),
            std::time::Instant::now(),
        );
        state.apply_gpu(GpuUpdate::Sampled(samples));
    }
}

/// A Debian engine (Docker 20.10, API 1.41, cgroup v1) with these runtimes, runc the default.
pub fn engine_info(runtimes: &[&str]) -> EngineInfo {
    EngineInfo {
        server_version: "20.10.24".into(),
        api_version: "1.41".into(),
        os: "Debian".into(),
        docker_root_dir: "/var/lib/docker".into(),
        runtimes: runtimes.iter().map(|r| r.to_string()).collect(),
        default_runtime: "runc".into(),
        cdi_spec_dirs: vec![],
        nvidia_cdi: false,
        nvidia_hook: false,
        cgroup_version: "1".into(),
    }
}
