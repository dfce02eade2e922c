//! GPU health from the driver's own words: the Xid catalog (`xid`), Xid lines found in kernel
//! logs (`kernel_log`), and reading this machine's kernel log (`live`).
//!
//! Below the doctor and the runs, beside `gpu/`: it names no other gpudeck module but `config`,
//! so the GPU collector, the doctor and run attribution can all use it.

pub mod kernel_log;
pub mod live;
pub mod log_time;
pub mod pci;
pub mod seen;
pub mod xid;

pub use kernel_log::{parse, LogTime, WallTime, XidLine};
pub use pci::PciAddress;
pub use seen::{summarise, XidProcess, XidSeen};
pub use xid::{Severity, XidAction, XidCatalog, XidClass, XidInfo};
