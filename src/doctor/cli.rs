//! `gpudeck doctor` on the command line: gather the facts, judge them, print text or JSON and
//! exit with the verdict (0 all passed, 1 warnings, 2 failures).

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use super::host_env::SystemEnv;
use super::{gather, run_checks, Check};
use crate::gpu::report::GpuReport;

/// Runs the diagnosis on `runtime`; `gpu` is the freshly collected GPU report (NVML or demo),
/// `extra` checks made elsewhere (the compatibility engine's) are added after the others. The
/// health counters are compared with the last look kept in `state_dir`, and this look kept.
pub fn run(
    gpu: GpuReport,
    docker_host: Option<&str>,
    json: bool,
    extra: Vec<Check>,
    state_dir: &Path,
    runtime: &tokio::runtime::Runtime,
) -> ExitCode {
    let facts = runtime.block_on(gather(gpu, docker_host, &SystemEnv));
    let mut report = run_checks(&facts);
    super::counters::add_health_counters(&mut report, &facts.gpu.gpus, state_dir);
    for check in extra {
        report.push(check);
    }
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => {
                errln!("gpudeck: could not encode the report: {e}");
                return ExitCode::from(2);
            }
        }
    } else if colour() {
        out!("{}", report.render_text_coloured(crate::output::width()));
    } else {
        out!("{}", report.render_text(crate::output::width()));
    }
    ExitCode::from(report.exit_code())
}

/// Colour only for a person at a terminal who has not asked for none (https://no-color.org).
fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
