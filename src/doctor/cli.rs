//! `gpudeck doctor` on the command line: gather the facts, judge them, print text or JSON and
//! exit with the verdict (0 all passed, 1 warnings, 2 failures).

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use super::host_env::SystemEnv;
use super::kernel_log::KernelLogChoice;
use super::{diagnose, gather_with, Extras};
use crate::gpu::report::GpuReport;
use crate::health::XidCatalog;

/// The kernel log to read Xids from, and the catalog (with the user's entries) that explains them.
pub struct Health {
    pub log: KernelLogChoice,
    pub xids: XidCatalog,
}

/// `--kernel-log FILE` (`-`: stdin) read as a stream, line by line, in memory that does not
/// grow with the file (see [`crate::health::kernel_log::read`]), or the live log without it.
/// Err is the message for a file that cannot be read: a path given on the command line fails
/// loudly.
pub fn kernel_log_choice(path: Option<&Path>) -> Result<KernelLogChoice, String> {
    let Some(path) = path else {
        return Ok(KernelLogChoice::Live);
    };
    let (source, read) = if path == Path::new("-") {
        let source = "standard input".to_string();
        let read = KernelLogChoice::saved(source.clone(), std::io::stdin().lock());
        (source, read)
    } else {
        let source = path.display().to_string();
        let read = std::fs::File::open(path)
            .and_then(|f| KernelLogChoice::saved(source.clone(), std::io::BufReader::new(f)));
        (source, read)
    };
    read.map_err(|e| {
        format!(
            "gpudeck: cannot read the kernel log {source}: {e}.\nSave it first and pass that \
             file, e.g. `sudo dmesg > kernel.log && gpudeck doctor --kernel-log kernel.log`."
        )
    })
}

/// Runs the diagnosis on `runtime`; `gpu` is the freshly collected GPU report (NVML or demo),
/// `extras` what [`diagnose`] judges besides the facts (the checks made elsewhere, the
/// compatibility data). The health counters are compared with the last look kept in
/// `extras.state_dir`, and this look kept.
pub fn run(
    gpu: GpuReport,
    docker_host: Option<&str>,
    json: bool,
    extras: Extras<'_>,
    health: Health,
    runtime: &tokio::runtime::Runtime,
) -> ExitCode {
    let facts = runtime.block_on(gather_with(
        gpu,
        docker_host,
        &SystemEnv,
        &health.log,
        health.xids,
    ));
    let (report, problem) = diagnose(&facts, extras);
    if let Some(problem) = problem {
        errln!("gpudeck: {problem}");
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
        crate::output::print_styled(&report.render_text_coloured(crate::output::width()));
    } else {
        out!("{}", report.render_text(crate::output::width()));
    }
    ExitCode::from(report.exit_code())
}

/// Colour only for a person at a terminal who has not asked for none (https://no-color.org).
fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_and_a_missing_one_says_how_to_save_it() {
        assert_eq!(kernel_log_choice(None), Ok(KernelLogChoice::Live));
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kernel.log");
        std::fs::write(&path, b"[1.0] NVRM: Xid (PCI:0000:18:00): 79, x\xff\n").expect("write");
        match kernel_log_choice(Some(&path)) {
            Ok(KernelLogChoice::Saved { source, log }) => {
                assert_eq!(source, path.display().to_string());
                assert_eq!(log.xids.len(), 1, "bad bytes do not stop it: {log:?}");
                assert_eq!(log.xids[0].text, "x\u{fffd}");
            }
            other => panic!("{other:?}"),
        }
        let missing = kernel_log_choice(Some(&dir.path().join("none.log"))).unwrap_err();
        assert!(
            missing.contains("none.log: No such file or directory"),
            "{missing}"
        );
        assert!(missing.contains("sudo dmesg > kernel.log"), "{missing}");
    }
}
