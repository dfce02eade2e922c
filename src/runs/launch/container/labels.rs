//! The labels gpudeck puts on what it makes on the engine (containers and networks), below both
//! the container plan and the service part so that neither imports the other for them.

/// Every container of a run carries this label with the run id: `docker ps --filter
/// label=gpudeck.run=ID` finds them, with or without the supervisor.
pub const LABEL_RUN: &str = "gpudeck.run";
/// The rank the container runs.
pub const LABEL_RANK: &str = "gpudeck.rank";
