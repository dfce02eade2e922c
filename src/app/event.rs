//! Everything the TUI's loop receives, as one type: terminal input, the collectors' updates, the
//! results of work the app started, and the signals that end it; and what handling one asks of
//! the loop.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::{Receiver, Sender};

use super::action::Command;
use crate::docker::update::DockerUpdate;
use crate::doctor::DoctorReport;
use crate::gpu::collector::GpuUpdate;
use crate::host::{KillSignal, ProcessTarget};
use crate::runs::watch::RunsUpdate;

/// One thing that happened, from whichever source.
#[derive(Debug)]
pub enum Event {
    /// A key, a click, a scroll or a resize.
    Input(crossterm::event::Event),
    /// The GPU collector's inventory, failure or samples.
    Gpu(GpuUpdate),
    /// The Docker collector's containers, images, stats, logs and pulls.
    Docker(DockerUpdate),
    /// The runs collector's listing, details and logs.
    Runs(RunsUpdate),
    /// The services collector's look at every service.
    Services(crate::services::ServicesUpdate),
    /// A run start, stop or restart the app began has finished.
    RunDone(RunDone),
    /// A diagnosis the app began has finished.
    Doctor(Box<DoctorReport>),
    /// A signal the user sent to a process has gone out, or could not.
    Signalled(SignalResult),
    /// SIGTERM, SIGHUP or SIGINT: restore the terminal and exit.
    Exit(ExitSignal),
}

/// How a start, stop or restart of a run went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDone {
    /// The status line that says so.
    pub line: String,
    pub is_error: bool,
    /// A new run to select once the Runs tab lists it.
    pub new_run: Option<String>,
}

/// The outcome of a signal sent on the user's behalf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalResult {
    pub target: ProcessTarget,
    pub signal: KillSignal,
    /// Why it could not be sent.
    pub result: Result<(), String>,
}

/// The process signals that end the TUI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitSignal {
    Terminate,
    /// The terminal went away (an SSH drop).
    Hangup,
    Interrupt,
}

/// When the screen should show what an event changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Redraw {
    /// Nothing on screen changed.
    #[default]
    No,
    /// New data: drawn with the next data frame.
    Data,
    /// The user's doing or its result: drawn at once.
    Now,
}

/// What handling one event asks of the loop.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Handled {
    /// Work for the outside world, in order.
    pub commands: Vec<Command>,
    pub redraw: Redraw,
    /// Leave the loop.
    pub exit: bool,
}

impl Handled {
    /// Drawn at once, with this work for the outside world.
    pub fn now(commands: Vec<Command>) -> Self {
        Self {
            commands,
            redraw: Redraw::Now,
            exit: false,
        }
    }
}

/// Feeds one collector's updates into the loop's channel, each wrapped as its event; it ends when
/// either side goes, and waits while the loop is behind, so a collector is held back as before.
pub fn forward<T: Send + 'static>(mut from: Receiver<T>, to: Sender<Event>, wrap: fn(T) -> Event) {
    tokio::spawn(async move {
        while let Some(item) = from.recv().await {
            if to.send(wrap(item)).await.is_err() {
                break;
            }
        }
    });
}

/// Turns SIGTERM, SIGHUP and SIGINT into events; the handlers are in place when it returns.
pub fn forward_signals(to: Sender<Event>) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            let which = tokio::select! {
                _ = term.recv() => ExitSignal::Terminate,
                _ = hup.recv() => ExitSignal::Hangup,
                _ = int.recv() => ExitSignal::Interrupt,
            };
            if to.send(Event::Exit(which)).await.is_err() {
                break;
            }
        }
    });
    Ok(())
}
