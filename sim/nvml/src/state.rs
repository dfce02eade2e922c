//! The process-wide NVML state: the init refcount and the simulation it created, and the
//! lookups every export starts with (initialised? which GPU? lost? supported?).

use std::sync::{Arc, Mutex, PoisonError};

use gpudeck_sim_model::{
    InitFailure, Metric, SimDevice, SimMigInstance, SimSample, SimSpec, Simulation,
};
use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::ffi::{
    index_of, mig_index_of, DRIVER_NOT_LOADED, GPU_IS_LOST, INVALID_ARGUMENT,
    LIB_RM_VERSION_MISMATCH, NOT_SUPPORTED, NO_PERMISSION, UNINITIALIZED, UNKNOWN,
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

/// What a device handle names: a GPU or a MIG device.
pub(crate) enum Handle {
    Gpu(Gpu),
    Mig(MigDevice),
}

impl Handle {
    /// UNINITIALIZED before init, INVALID_ARGUMENT for a foreign handle or a MIG device that
    /// does not exist (any more).
    pub fn of(handle: nvmlDevice_t) -> Result<Handle, nvmlReturn_t> {
        crate::cost::spend(crate::cost::Call::Query);
        let sim = sim()?;
        if let Some(index) = index_of(handle).filter(|i| *i < sim.device_count()) {
            return Ok(Handle::Gpu(Gpu { sim, index }));
        }
        let (gpu, index) = mig_index_of(handle).ok_or(INVALID_ARGUMENT)?;
        sim.mig_instance(gpu, index).ok_or(INVALID_ARGUMENT)?;
        Ok(Handle::Mig(MigDevice { sim, gpu, index }))
    }
}

/// One MIG device of the running simulation, as named by a MIG device handle.
pub(crate) struct MigDevice {
    pub sim: Arc<Simulation>,
    /// Index of the parent GPU.
    pub gpu: u32,
    /// MIG device index under the parent.
    pub index: u32,
}

impl MigDevice {
    /// The instance's facts; GPU_IS_LOST when its parent is lost.
    pub fn instance(&self) -> Result<&SimMigInstance, nvmlReturn_t> {
        if self.sim.is_lost(self.gpu) {
            return Err(GPU_IS_LOST);
        }
        self.sim
            .mig_instance(self.gpu, self.index)
            .ok_or(INVALID_ARGUMENT)
    }
}

impl Gpu {
    /// The GPU of `handle`: UNINITIALIZED before init, INVALID_ARGUMENT for a foreign handle,
    /// NOT_SUPPORTED for a MIG device handle (queries a MIG device cannot answer on its own,
    /// such as temperature, power or clocks, which belong to its parent).
    pub fn of(handle: nvmlDevice_t) -> Result<Gpu, nvmlReturn_t> {
        match Handle::of(handle)? {
            Handle::Gpu(gpu) => Ok(gpu),
            Handle::Mig(_) => Err(NOT_SUPPORTED),
        }
    }

    /// NOT_SUPPORTED while MIG mode is on: utilisation rates, encoder, decoder and process
    /// utilisation "are not currently supported" on MIG-enabled GPUs (nvml.h,
    /// nvmlDeviceGetUtilizationRates), and nvidia-smi shows N/A.
    pub fn check_not_mig(&self) -> Result<(), nvmlReturn_t> {
        match self.sim.device(self.index) {
            Some(d) if d.mig_enabled => Err(NOT_SUPPORTED),
            _ => Ok(()),
        }
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
