//! The Slurm backend: why a spec cannot become a batch job, the batch script itself (pure), and
//! what Slurm's tools say of a submitted job. The `[slurm]` settings are the config's types,
//! re-exported here.

mod explain;
mod job;
pub(super) mod run;
mod script;
mod status;
mod validate;

pub use super::error::slurm::{SlurmError, SubmitError};
pub use explain::{ended as explain_end, waiting as explain_wait};
pub use job::{cancel, observe, submit_script, SlurmJob};
pub use script::{batch_script, job_shape, log_files};
pub use status::{
    classify_refusal, exit_code_of, parse_sacct, parse_scontrol, parse_squeue, submitted_job_id,
    JobView, SACCT_FORMAT,
};

pub use crate::config::{SlurmContainer, SlurmSettings};
