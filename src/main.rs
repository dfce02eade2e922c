//! The gpudeck binary: parse the command line, pick the TUI or a subcommand, map errors to exit codes.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser as _;

use gpudeck::app::compat::CompatView;
use gpudeck::app::themes::ThemeChoice;
use gpudeck::app::{self, App, Sources};
use gpudeck::cli::runs as runs_cli;
use gpudeck::cli::services::{self as services_cli, ServiceCommand};
use gpudeck::cli::{Cli, Commands};
use gpudeck::compat::{cli as compat_cli, CompatData};
use gpudeck::config::{self, usable_themes, Config, Dirs, Theme};
use gpudeck::docker::cli::{self as docker_cli, DockerTask};
use gpudeck::gpu::report;
use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::{GpuError, GpuSource, GpuSourceChoice};
use gpudeck::health::XidCatalog;
use gpudeck::host::{self, ProcFs, ProcessTable};
use gpudeck::metrics;
use gpudeck::pull::Catalog;
use gpudeck::read_only;
use gpudeck::runs::{self, RunStore};
use gpudeck::secrets::Secrets;
use gpudeck::shell::cli as shell_cli;
use gpudeck::{errln, errout, out, outln};

/// Exit code for a bad command line or an explicitly given bad config file.
const EXIT_USAGE: u8 = 2;
/// The shortest refresh interval: NVML reads of every GPU more often than this cost more than
/// they show.
const MIN_REFRESH_MS: u64 = 100;
/// Exit code when the requested data could not be produced (no GPUs, no driver).
const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = parse();
    match &cli.command {
        // Before the config: a run already started must not depend on the config still parsing.
        Some(Commands::Supervise { dir }) => {
            gpudeck::services::keeper::keep(dir);
            return runs::supervise(dir);
        }
        Some(Commands::Completions { shell }) => {
            return print_generated(|out| gpudeck::cli_docs::completions(*shell, out))
        }
        Some(Commands::Man) => return print_generated(gpudeck::cli_docs::man),
        _ => {}
    }
    let dirs = match Dirs::from_env() {
        Ok(dirs) => dirs,
        Err(e) => {
            errln!("gpudeck: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let log = gpudeck::logging::init(&dirs.state);
    tracing::debug!(log = ?log, "logging");
    let mut loaded = match config::load(&dirs, cli.config.as_deref(), cli.theme.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            say_wrapped(&format!("gpudeck: {e}"));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    loaded.warnings.extend(refresh_warning(cli.refresh));
    if cli.command.is_some() {
        // The dashboard shows the first one in its status line; stderr belongs to it there.
        tell_config_warnings(&loaded.warnings);
    }
    let mut config = loaded.config;
    if let Some(refusal) = read_only_refusal(&cli, &dirs, &config) {
        errln!("{refusal}");
        return ExitCode::from(EXIT_USAGE);
    }
    if let Some(ms) = cli.refresh {
        config.general.refresh_ms = ms.max(MIN_REFRESH_MS);
    }
    let sources = match sources(&cli, &dirs, &config) {
        Ok(s) => s,
        Err(e) => {
            errln!(
                "{}",
                gpudeck::output::wrap(&format!("gpudeck: {e}\n{}", e.fix()), "")
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let docker_host = cli.docker_host.clone();
    match cli.command {
        Some(Commands::Gpus { json, .. }) => gpus(sources, json),
        Some(Commands::Containers { json, .. }) => {
            let gpus = Box::new(move || gpu_samples(sources));
            docker(
                DockerTask::Containers { json, gpus },
                docker_host.as_deref(),
            )
        }
        Some(Commands::Images { json, .. }) => {
            docker(DockerTask::Images { json }, docker_host.as_deref())
        }
        Some(Commands::Compat {
            ref images, json, ..
        }) => compat(sources, &dirs, images, json, docker_host.as_deref()),
        Some(Commands::Doctor {
            json,
            ref kernel_log,
            ..
        }) => doctor(
            sources,
            &dirs,
            &config,
            docker_host.as_deref(),
            json,
            kernel_log.as_deref(),
        ),
        Some(Commands::Pull {
            ref image, json, ..
        }) => docker(
            DockerTask::Pull {
                image: image.clone(),
                json,
            },
            docker_host.as_deref(),
        ),
        Some(Commands::Shell(ref args)) => {
            shell(args, sources, &dirs, &config, docker_host.as_deref())
        }
        Some(Commands::Run(ref args)) => runs_cli::run(
            args,
            &RunStore::new(&dirs.data),
            gpu_choice(&cli),
            || gpu_report(sources),
            (
                container_setup(docker_host.clone(), &config, &dirs),
                slurm_defaults(&config),
            ),
        ),
        Some(Commands::Runs { json, show_secrets }) => runs_cli::list(
            &RunStore::new(&dirs.data),
            json,
            &secrets(&config, show_secrets),
            &xid_catalog(&dirs),
        ),
        Some(Commands::Logs(ref args)) => runs_cli::logs(args, &RunStore::new(&dirs.data)),
        Some(Commands::Stop(ref args)) => runs_cli::stop(args, &RunStore::new(&dirs.data)),
        Some(Commands::Notebook(ref args)) => service(
            ServiceCommand::Notebook(args),
            &cli,
            &dirs,
            &config,
            sources,
        ),
        Some(Commands::Tensorboard(ref args)) => service(
            ServiceCommand::Tensorboard(args),
            &cli,
            &dirs,
            &config,
            sources,
        ),
        Some(Commands::Triton(ref args)) => {
            service(ServiceCommand::Triton(args), &cli, &dirs, &config, sources)
        }
        Some(Commands::Services { json }) => {
            services_cli::list(&RunStore::new(&dirs.data), &config, json, || {
                gpu_samples(sources)
            })
        }
        Some(Commands::Export(ref args)) => runs_cli::export(
            args,
            &RunStore::new(&dirs.data),
            &secrets(&config, args.show_secrets),
            &xid_catalog(&dirs),
        ),
        Some(Commands::Rerun(ref args)) => {
            let store = RunStore::new(&dirs.data);
            let (choice, sources) = match recorded_source(&cli, &store, &args.run) {
                Some(recorded) => (
                    recorded.clone(),
                    sources_for(recorded, cli.docker_host.clone(), &dirs, &config)
                        .unwrap_or(sources),
                ),
                None => (gpu_choice(&cli), sources),
            };
            let service = store
                .find(&args.run)
                .is_ok_and(|r| r.record.service.is_some());
            if service {
                let setup = services_cli::ServiceSetup {
                    store: &store,
                    config: &config,
                    gpu_source: choice,
                    container: container_setup(docker_host.clone(), &config, &dirs),
                    slurm: slurm_defaults(&config),
                    scratch: dirs.state.clone(),
                };
                return services_cli::restart(args, setup, || gpu_report(sources));
            }
            runs_cli::rerun(
                args,
                &store,
                choice,
                || gpu_report(sources),
                (
                    container_setup(docker_host.clone(), &config, &dirs),
                    slurm_defaults(&config),
                ),
            )
        }
        Some(Commands::Serve {
            metrics,
            ref web_config,
            ..
        }) => serve(sources, &dirs, &config, metrics, web_config.clone()),
        Some(Commands::Supervise { .. } | Commands::Completions { .. } | Commands::Man) => {
            ExitCode::from(EXIT_USAGE)
        }
        None => tui(
            &cli,
            &dirs,
            (&loaded.theme_name, loaded.theme),
            &loaded.warnings,
            &config,
            sources,
            started,
        ),
    }
}

/// The command line, or the end of this process with clap's message (or, for a program's flag
/// typed before `--` in `gpudeck run`, the command to type instead).
fn parse() -> Cli {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match Cli::try_parse_from(&argv) {
        Ok(cli) => cli.merged(),
        Err(e) => {
            let words: Vec<String> = argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            if let Some(hint) = run_flag_hint(&e, &words) {
                say_wrapped(&hint);
                std::process::exit(i32::from(EXIT_USAGE));
            }
            exit_with_clap_error(&e, &words)
        }
    }
}

/// Ends with clap's message; where an argument holds a control character (clap quotes what
/// was typed), the message is printed plain, with the characters shown as escapes.
fn exit_with_clap_error(e: &clap::Error, argv: &[String]) -> ! {
    if !argv
        .iter()
        .any(|a| a.chars().any(gpudeck::sanitise::is_unsafe))
    {
        e.exit()
    }
    let text = e.render().to_string();
    if e.use_stderr() {
        errout!("{text}");
    } else {
        out!("{text}");
    }
    std::process::exit(e.exit_code())
}

/// See [`parse`]: only for an unknown flag after `gpudeck run PROGRAM ...`.
fn run_flag_hint(e: &clap::Error, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = bad.split('=').next().unwrap_or(bad);
    let at = argv
        .iter()
        .position(|a| a == flag || a.starts_with(&format!("{flag}=")))?;
    match Cli::try_parse_from(&argv[..at]).ok()?.command? {
        Commands::Run(args) => runs_cli::unknown_flag_hint(&args, argv, at),
        _ => None,
    }
}

/// Prints what `generate` writes (completions, the man page) to stdout.
fn print_generated(generate: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> ExitCode {
    let mut text = Vec::new();
    match generate(&mut text) {
        Ok(()) => {
            gpudeck::output::print_bytes(&text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("gpudeck: could not generate it: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// The refusal of a subcommand that would change the machine while `--read-only` (or the
/// config's `read_only = true`) holds; before any source is opened, so nothing is touched.
fn read_only_refusal(cli: &Cli, dirs: &Dirs, config: &Config) -> Option<String> {
    let file = cli.config.clone().unwrap_or_else(|| dirs.config_file());
    let mode = read_only::ReadOnly {
        flag: cli.read_only,
        config: config.general.read_only.then_some(file.as_path()),
    };
    read_only::refusal(cli.command.as_ref()?, mode, gpudeck::output::width())
}

/// What `--refresh` below the minimum turns into, said rather than done silently.
fn refresh_warning(refresh: Option<u64>) -> Option<String> {
    refresh.filter(|ms| *ms < MIN_REFRESH_MS).map(|ms| {
        format!(
            "--refresh {ms} is below the minimum of {MIN_REFRESH_MS} ms; it was raised to \
             {MIN_REFRESH_MS} ms."
        )
    })
}

/// Which environment values to hide: the config's names unless `--show-secrets`.
fn secrets(config: &Config, show: bool) -> Secrets {
    Secrets::from_config(&config.general.secret_names, show)
}

/// The Xid catalog with the user's files (`<config>/health/*.toml`) over it; a bad file is
/// said on stderr and left out.
fn xid_catalog(dirs: &Dirs) -> XidCatalog {
    let (catalog, warnings) = XidCatalog::load(Some(&dirs.config.join("health")));
    tell_config_warnings(&warnings);
    catalog
}

/// Mistakes in the user's config or theme that were worked around, on stderr.
fn tell_config_warnings(warnings: &[String]) {
    for warning in warnings {
        say_wrapped(&format!("gpudeck: {warning}"));
    }
}

/// A message on stderr wrapped to the terminal's width, so it reads whole; a path or a
/// `file:line:col` is never split.
fn say_wrapped(message: &str) {
    errln!("{}", gpudeck::output::wrap(message, "  "));
}

/// The dashboard: needs a terminal; everything else is the app's.
fn tui(
    cli: &Cli,
    dirs: &Dirs,
    (theme_name, theme): (&str, Theme),
    warnings: &[String],
    config: &Config,
    sources: Sources,
    started: Instant,
) -> ExitCode {
    if !std::io::stdout().is_terminal() {
        errln!(
            "{}",
            gpudeck::output::wrap(
                "gpudeck: the dashboard needs a terminal; for scripts use `gpudeck gpus` (or `gpudeck gpus --json`)",
                "  "
            )
        );
        return ExitCode::from(EXIT_USAGE);
    }
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let theme = if no_color { Theme::monochrome() } else { theme };
    let mut app = App::new(config, theme, host::hostname(), cli.read_only);
    app.state.themes = if no_color {
        ThemeChoice::fixed(
            "monochrome",
            theme,
            "NO_COLOR is set, so the dashboard draws without colours: start gpudeck without NO_COLOR to switch themes",
        )
    } else {
        ThemeChoice::new(usable_themes(&dirs.themes_dir()), theme_name, theme)
    };
    if cli.show_secrets {
        app.state.secrets = Secrets::shown();
    }
    let (catalog, catalog_warnings) = Catalog::load(Some(&dirs.config.join("catalog")));
    for w in &catalog_warnings {
        tracing::warn!("{w}");
    }
    app.state.docker.catalog = catalog.entries().to_vec();
    let (compat_data, compat_warnings) = CompatData::load(Some(&dirs.config.join("compat")));
    for w in &compat_warnings {
        tracing::warn!("{w}");
    }
    app.state.compat = CompatView::new(compat_data);
    app.state.refresh_compat();
    let (xid_catalog, xid_warnings) = XidCatalog::load(Some(&dirs.config.join("health")));
    for w in &xid_warnings {
        tracing::warn!("{w}");
    }
    app.state.xid_catalog = xid_catalog;
    // Every warning goes to the messages view (M); the first one stays in the footer.
    let all_warnings = warnings
        .iter()
        .chain(&catalog_warnings)
        .chain(&compat_warnings)
        .chain(&xid_warnings);
    for w in all_warnings.rev() {
        app.state.set_status(w.clone(), true);
    }
    tracing::info!(demo = cli.demo, "starting the TUI");
    let interval = Duration::from_millis(config.general.refresh_ms.max(100));
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let run = app::run(app, sources, interval, config.general.mouse, started);
    match runtime.block_on(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("gpudeck: {e:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// `gpudeck serve --metrics ADDR`: the collector and the endpoint until SIGINT or SIGTERM.
fn serve(
    sources: Sources,
    dirs: &Dirs,
    config: &Config,
    addr: std::net::SocketAddr,
    web_config: Option<std::path::PathBuf>,
) -> ExitCode {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let setup = metrics::serve::ServeSetup {
        open_gpus: sources.open_gpus,
        processes: sources.processes,
        interval: Duration::from_millis(config.general.refresh_ms.max(100)),
    };
    let store = RunStore::new(&dirs.data);
    let endpoint = metrics::feed::Endpoint {
        addr,
        web_config: web_config.or_else(|| config_web_config(config, dirs)),
    };
    if let Some(warning) = endpoint.warning() {
        errln!(
            "{}",
            gpudeck::output::wrap(&format!("gpudeck: warning: {warning}"), "  ")
        );
    }
    runtime.block_on(async move {
        let feed = match metrics::MetricsFeed::start(&endpoint, store).await {
            Ok(f) => f,
            Err(e @ metrics::MetricsError::WebConfig(_)) => {
                errln!("gpudeck: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
            Err(e) => {
                errln!("gpudeck: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        };
        let stop = tokio_util::sync::CancellationToken::new();
        tokio::spawn(metrics::serve::cancel_on_signal(stop.clone()));
        match metrics::serve::run(feed, setup, stop, say_serving).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                say_wrapped(&format!("gpudeck: {e}\n{}", e.fix()));
                ExitCode::from(EXIT_FAILURE)
            }
        }
    })
}

/// The banner, once the first sample is in: it is for whoever watches, and serving goes on when
/// nobody reads it.
fn say_serving(feed: &metrics::MetricsFeed) {
    let banner = gpudeck::output::try_print(format_args!(
        "gpudeck: serving Prometheus metrics on {}://{}/metrics\n",
        feed.scheme(),
        feed.addr()
    ));
    if let Err(e) = banner {
        tracing::warn!("the banner was not printed: {e}");
    }
}

/// `[metrics] web_config`, relative to the config file's directory.
fn config_web_config(config: &Config, dirs: &Dirs) -> Option<std::path::PathBuf> {
    config
        .metrics
        .web_config
        .as_ref()
        .map(|p| dirs.config.join(p))
}

/// A Docker subcommand on its own runtime.
fn docker(task: DockerTask, host: Option<&str>) -> ExitCode {
    match runtime() {
        Ok(rt) => docker_cli::run(task, host, &rt),
        Err(code) => code,
    }
}

/// The single-threaded async runtime the TUI and the Docker subcommands run on.
fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            errln!("gpudeck: could not start the async runtime: {e}");
            ExitCode::from(EXIT_FAILURE)
        })
}

/// The GPU source and process table for this invocation: simulated with --demo, else NVML and /proc.
fn sources(cli: &Cli, dirs: &Dirs, config: &Config) -> Result<Sources, GpuError> {
    sources_for(gpu_choice(cli), cli.docker_host.clone(), dirs, config)
}

/// The sources of one GPU source choice.
fn sources_for(
    choice: GpuSourceChoice,
    docker_host: Option<String>,
    dirs: &Dirs,
    config: &Config,
) -> Result<Sources, GpuError> {
    let (open_gpus, processes): (gpudeck::gpu::collector::Opener, Arc<dyn ProcessTable>) =
        match &choice {
            GpuSourceChoice::Demo => {
                let sim = SimSource::from_env()?;
                let table: Arc<dyn ProcessTable> = Arc::new(sim.process_table());
                (
                    Box::new(move || Ok(Box::new(sim) as Box<dyn GpuSource>)),
                    table,
                )
            }
            GpuSourceChoice::Nvml { .. } => (
                Box::new({
                    let choice = choice.clone();
                    move || choice.open()
                }),
                Arc::new(ProcFs::new()),
            ),
        };
    Ok(Sources {
        open_gpus,
        processes,
        docker_host: docker_host.clone(),
        data_dir: dirs.data.clone(),
        state_dir: dirs.state.clone(),
        gpu_choice: choice,
        container: container_setup(docker_host, config, dirs),
        slurm: slurm_defaults(config),
        metrics_listen: config.metrics.listen.map(|addr| metrics::feed::Endpoint {
            addr,
            web_config: config_web_config(config, dirs),
        }),
    })
}

/// For `rerun` with neither `--demo` nor `--nvml-lib`: the GPU source the run was started with
/// (a `--demo` run is run again on the simulated GPUs), said when it is not NVML's default.
fn recorded_source(cli: &Cli, store: &RunStore, run: &str) -> Option<GpuSourceChoice> {
    if cli.demo || cli.nvml_lib.is_some() {
        return None;
    }
    let recorded = store.find(run).ok()?.record.gpu_source?;
    if recorded != gpu_choice(cli) {
        say_wrapped(&format!(
            "gpudeck: using the GPU source the run was started with: {recorded} (give --demo or \
             --nvml-lib to choose another)"
        ));
    }
    Some(recorded)
}

/// Starts a notebook, TensorBoard or Triton server as a run of its own.
fn service(
    command: ServiceCommand<'_>,
    cli: &Cli,
    dirs: &Dirs,
    config: &Config,
    sources: Sources,
) -> ExitCode {
    let store = RunStore::new(&dirs.data);
    let setup = services_cli::ServiceSetup {
        store: &store,
        config,
        gpu_source: gpu_choice(cli),
        container: container_setup(cli.docker_host.clone(), config, dirs),
        slurm: slurm_defaults(config),
        scratch: dirs.state.clone(),
    };
    services_cli::start(command, setup, || gpu_report(sources))
}

/// The config's backend for runs that name none, and its `[slurm]` settings.
fn slurm_defaults(config: &Config) -> runs::SlurmDefaults {
    runs::SlurmDefaults {
        backend: config.runs.backend,
        settings: config.slurm.settings(),
    }
}

/// What a container run needs from the command line and the config: the engine, the shell
/// defaults its containers are built from, and the user's compatibility tables.
fn container_setup(
    docker_host: Option<String>,
    config: &Config,
    dirs: &Dirs,
) -> runs::ContainerSetup {
    runs::ContainerSetup {
        docker_host,
        shell: config.shell.clone(),
        compat_dir: Some(dirs.config.join("compat")),
    }
}

/// The GPU source the flags choose, as a run records it for its supervisor.
fn gpu_choice(cli: &Cli) -> GpuSourceChoice {
    GpuSourceChoice::from_flags(cli.demo, cli.nvml_lib.clone())
}

/// One fresh sample of every GPU with its processes, `None` when the GPUs cannot be read.
fn gpu_samples(sources: Sources) -> Option<Vec<gpudeck::gpu::GpuSample>> {
    let report = gpu_report(sources);
    report
        .error
        .is_none()
        .then(|| report.gpus.into_iter().map(|g| g.sample).collect())
}

/// One fresh sample of every GPU, or the reason there is none.
fn gpu_report(sources: Sources) -> report::GpuReport {
    let host = host::hostname();
    match (sources.open_gpus)() {
        Ok(mut source) => report::collect(source.as_mut(), &sources.processes, host),
        Err(e) => report::failed(host, &e),
    }
}

fn compat(
    sources: Sources,
    dirs: &Dirs,
    images: &[String],
    json: bool,
    docker_host: Option<&str>,
) -> ExitCode {
    let gpu = gpu_report(sources);
    let (catalog, mut warnings) = Catalog::load(Some(&dirs.config.join("catalog")));
    let (data, data_warnings) = CompatData::load(Some(&dirs.config.join("compat")));
    warnings.extend(data_warnings);
    for w in &warnings {
        errln!("gpudeck: {w}");
    }
    match runtime() {
        Ok(rt) => compat_cli::run(&gpu, images, json, docker_host, &catalog, &data, &rt),
        Err(_) => ExitCode::from(gpudeck::compat::report::EXIT_FAILED),
    }
}

/// `gpudeck doctor`: the GPUs from the same opener as everything else (--demo, --nvml-lib).
fn doctor(
    sources: Sources,
    dirs: &Dirs,
    config: &Config,
    docker_host: Option<&str>,
    json: bool,
    kernel_log: Option<&std::path::Path>,
) -> ExitCode {
    let log = match gpudeck::doctor::cli::kernel_log_choice(kernel_log) {
        Ok(log) => log,
        Err(message) => {
            errln!("{}", gpudeck::output::wrap(&message, ""));
            return ExitCode::from(2);
        }
    };
    let gpus = gpu_report(sources);
    let (catalog, mut warnings) = Catalog::load(Some(&dirs.config.join("catalog")));
    let (data, data_warnings) = CompatData::load(Some(&dirs.config.join("compat")));
    warnings.extend(data_warnings);
    let (xids, xid_warnings) = XidCatalog::load(Some(&dirs.config.join("health")));
    warnings.extend(xid_warnings);
    for w in &warnings {
        errln!("gpudeck: {w}");
    }
    let health = gpudeck::doctor::cli::Health { log, xids };
    match runtime() {
        Ok(rt) => {
            let services =
                services_cli::look_now(&RunStore::new(&dirs.data), config.notebook.idle_alert.0)
                    .unwrap_or_default();
            let idle = gpudeck::services::idle_check(&services, config.notebook.idle_alert.0);
            let extras = gpudeck::doctor::Extras {
                checks: vec![idle],
                compat: &data,
                catalog: catalog.entries(),
                state_dir: &dirs.state,
            };
            gpudeck::doctor::cli::run(gpus, docker_host, json, extras, health, &rt)
        }
        Err(code) => code,
    }
}

/// `gpudeck shell`: exit code 125 when gpudeck fails, else the container's (see shell::cli).
fn shell(
    args: &gpudeck::cli::ShellArgs,
    sources: Sources,
    dirs: &Dirs,
    config: &Config,
    docker_host: Option<&str>,
) -> ExitCode {
    let (data, warnings) = CompatData::load(Some(&dirs.config.join("compat")));
    for w in &warnings {
        errln!("gpudeck: {w}");
    }
    let env = shell_cli::ShellEnv {
        config: &config.shell,
        claims: Some(gpudeck::claims::Claims::new(&dirs.data)),
        liveness: &gpudeck::runs::SystemLiveness,
        compat: data,
        docker_host,
        gpu_report: Box::new(move || gpu_report(sources)),
    };
    match runtime() {
        Ok(rt) => shell_cli::run(&shell_options(args), env, &rt),
        Err(_) => ExitCode::from(shell_cli::EXIT_GPUDECK_FAILED),
    }
}

/// The shell's flags as plain values, so `shell` never names the clap definitions.
fn shell_options(args: &gpudeck::cli::ShellArgs) -> gpudeck::shell::ShellOptions {
    gpudeck::shell::ShellOptions {
        image: args.image.clone(),
        gpus: args.gpus.clone(),
        workdir: args.workdir.clone(),
        keep: args.keep,
        network: args.network.clone(),
        name: args.name.clone(),
        user: args.user.clone(),
        shm: args.shm.clone(),
        force: args.force,
        list: args.list,
        attach: args.attach.clone(),
        command: args.command.clone(),
    }
}

fn gpus(sources: Sources, json: bool) -> ExitCode {
    let report = gpu_report(sources);
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => {
                errln!("gpudeck: could not encode the report: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        }
    } else {
        out!(
            "{}",
            gpudeck::gpu::report_text::render_text(&report, gpudeck::output::width())
        );
    }
    if report.error.is_some() {
        ExitCode::from(EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    }
}
