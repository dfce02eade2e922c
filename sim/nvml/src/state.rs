//! The process-wide NVML state: the init refcount and the simulation it created, and the
//! lookups every export starts with (initialised? which GPU? lost? supported?).

use std::sync::{Arc, Mutex, PoisonError};

use gpudeck_sim_model::{InitFailure, Metric, SimDevice, SimSample, SimSpec, Simulation};
use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::ffi::{
    index_of, DRIVER_NOT_LOADED, GPU_IS_LOST, INVALID_ARGUMENT, LIB_RM_VERSION_MISMATCH,
    NOT_SUPPORTED, NO_PERMISSION, UNINITIALIZED, UNKNOWN,
};

struct State {
    refs: u32,
    sim: Option<Arc<Simulation>>,
}

static STATE: Mutex<State> = Mutex::new(State { refs: 0, sim: None });

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `nvmlInit*`: the first call builds the simulation from `GPUDECK_SIM`; later calls count.
pub(crate) fn init() -> Result<(), nvmlReturn_t> {
    let mut state = lock();
    if state.refs > 0 {
        state.refs += 1;
        return Ok(());
    }
    // A bad spec must not print (the caller may own the terminal): report UNKNOWN.
    let spec = SimSpec::from_env().map_err(|_| UNKNOWN)?;
    if let Some(failure) = spec.init_failure {
        return Err(match failure {
            InitFailure::DriverNotLoaded => DRIVER_NOT_LOADED,
            InitFailure::LibRmVersionMismatch => LIB_RM_VERSION_MISMATCH,
            InitFailure::NoPermission => NO_PERMISSION,
        });
    }
    crate::cost::enable(spec.call_costs);
    crate::cost::spend(crate::cost::Call::Init);
    state.sim = Some(Arc::new(Simulation::new(spec)));
    state.refs = 1;
    Ok(())
}

/// `nvmlShutdown`: the last call drops the simulation.
pub(crate) fn shutdown() -> Result<(), nvmlReturn_t> {
    let mut state = lock();
    if state.refs == 0 {
        return Err(UNINITIALIZED);
    }
    state.refs -= 1;
    if state.refs == 0 {
        state.sim = None;
    }
    Ok(())
}

/// The running simulation, or UNINITIALIZED.
pub(crate) fn sim() -> Result<Arc<Simulation>, nvmlReturn_t> {
    lock().sim.clone().ok_or(UNINITIALIZED)
}

/// One GPU of the running simulation, as named by a device handle.
pub(crate) struct Gpu {
    pub sim: Arc<Simulation>,
    pub index: u32,
}

impl Gpu {
    /// The GPU of `handle`: UNINITIALIZED before init, INVALID_ARGUMENT for a foreign handle.
    pub fn of(handle: nvmlDevice_t) -> Result<Gpu, nvmlReturn_t> {
        crate::cost::spend(crate::cost::Call::Query);
        let sim = sim()?;
        let index = index_of(handle)
            .filter(|i| *i < sim.device_count())
            .ok_or(INVALID_ARGUMENT)?;
        Ok(Gpu { sim, index })
    }

    /// Static facts; present for every valid index.
    pub fn device(&self) -> Result<&SimDevice, nvmlReturn_t> {
        self.sim.device(self.index).ok_or(INVALID_ARGUMENT)
    }

    /// GPU_IS_LOST for a lost GPU, NOT_SUPPORTED when `metric` is unsupported.
    pub fn check(&self, metric: Option<Metric>) -> Result<(), nvmlReturn_t> {
        if self.sim.is_lost(self.index) {
            return Err(GPU_IS_LOST);
        }
        match metric {
            Some(m) if !self.sim.is_supported(m) => Err(NOT_SUPPORTED),
            _ => Ok(()),
        }
    }

    /// The dynamic readings now.
    pub fn sample(&self) -> SimSample {
        self.sim.sample(self.index, self.sim.now())
    }

    /// Whether `metric` is marked unsupported by the spec (not just missing on the profile).
    pub fn knob_unsupported(&self, metric: Metric) -> bool {
        self.sim.spec().unsupported.contains(&metric)
    }
}
