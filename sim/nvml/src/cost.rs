//! `cost=h100`: each call spends the CPU time it takes on a real H100's driver, so that a
//! monitor's CPU on the simulator says what it would cost on a real machine. The figures were
//! measured on an H100 80GB HBM3 PCIe, driver 580.159.04, 200 calls each (sim/README.md): most
//! queries 1-3 µs, a few tens of µs, the static modes about 0.13 ms, the maximum
//! clocks 1.4 ms, process utilisation 2.2 ms, the energy counter 4.4 ms, PCIe throughput 0.85 ms
//! of CPU in 21 ms of wall time (it waits out a sampling window).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);

/// Turns the costs on or off (at `nvmlInit`, from the spec).
pub(crate) fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// A kind of call, by what it costs.
#[derive(Clone, Copy)]
pub(crate) enum Call {
    /// Utilisation, temperature, power, clocks, P-state, names, PCI info: 2 µs.
    Query,
    /// Memory info: 8 µs.
    Memory,
    /// Persistence and compute mode: 7 µs.
    Mode,
    /// The current PCIe link width: 30 µs.
    PcieWidth,
    /// The running processes: 25 µs.
    Processes,
    /// ECC, MIG and display mode, BAR1 memory: 0.135 ms.
    StaticMode,
    /// A maximum clock: 1.4 ms.
    MaxClock,
    /// Process utilisation samples: 2.2 ms.
    ProcessUtilization,
    /// The energy counter: 4.4 ms.
    Energy,
    /// PCIe throughput: 0.85 ms of CPU, 20.9 ms in all.
    PcieThroughput,
    /// `nvmlInit`: 12 ms.
    Init,
}

impl Call {
    /// CPU time, then the time spent waiting.
    fn cost(self) -> (Duration, Duration) {
        let us = Duration::from_micros;
        match self {
            Call::Query => (us(2), Duration::ZERO),
            Call::Memory => (us(8), Duration::ZERO),
            Call::Mode => (us(7), Duration::ZERO),
            Call::PcieWidth => (us(30), Duration::ZERO),
            Call::Processes => (us(25), Duration::ZERO),
            Call::StaticMode => (us(135), Duration::ZERO),
            Call::MaxClock => (us(1_400), Duration::ZERO),
            Call::ProcessUtilization => (us(2_200), Duration::ZERO),
            Call::Energy => (us(4_400), Duration::ZERO),
            Call::PcieThroughput => (us(850), us(20_050)),
            Call::Init => (us(12_000), Duration::ZERO),
        }
    }
}

/// Spends what `call` costs on a real driver, when the costs are on: its CPU time busy (the
/// calling thread's own CPU time, so that a loaded machine does not shorten it), then its
/// waiting asleep.
pub(crate) fn spend(call: Call) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let (busy, wait) = call.cost();
    let (cpu, wall) = (thread_cpu(), Instant::now());
    loop {
        // The wall clock where the thread's clock cannot be read.
        let spent = match (cpu, thread_cpu()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => wall.elapsed(),
        };
        if spent >= busy {
            break;
        }
        std::hint::spin_loop();
    }
    if !wait.is_zero() {
        std::thread::sleep(wait);
    }
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to a local.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    ok.then(|| Duration::new(secs, nanos))
}
