//! The signals gpudeck sends to end a process, named as the person at the keyboard knows them.

use std::fmt;

/// The signals gpudeck offers for ending a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KillSignal {
    /// Ask politely: the process may clean up (free GPU memory, write a checkpoint).
    Term,
    /// Cannot be caught; for a process that ignored `Term`.
    Kill,
}

impl KillSignal {
    pub(crate) fn as_raw(self) -> libc::c_int {
        match self {
            Self::Term => libc::SIGTERM,
            Self::Kill => libc::SIGKILL,
        }
    }
}

impl fmt::Display for KillSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Term => "SIGTERM",
            Self::Kill => "SIGKILL",
        })
    }
}
