//! Read-only mode on the command line: which subcommands change the machine, and the refusal
//! that says why and how to lift it. The dashboard has its own gate (`app::keymap`); this one
//! holds for the twins, so `--read-only` (or `read_only = true`) means the same everywhere.

use std::path::Path;

use crate::cli::Commands;

/// Why read-only mode is on: the flag, the config key (and which file set it), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOnly<'a> {
    pub flag: bool,
    /// The config file whose `read_only = true` turned it on, if one did.
    pub config: Option<&'a Path>,
}

impl ReadOnly<'_> {
    pub fn is_on(&self) -> bool {
        self.flag || self.config.is_some()
    }
}

/// What `command` would change on this machine, in words; `None` for one that only reads.
/// `serve` only answers scrapes, `export -o` writes the file asked for (as the dashboard's `w`
/// saves a log), and a Slurm `--dry-run` only prints a script.
pub fn what_it_changes(command: &Commands) -> Option<&'static str> {
    match command {
        Commands::Run(args) if args.dry_run => None,
        Commands::Run(_) => Some("start a training run"),
        Commands::Rerun(_) => Some("start a training run again"),
        Commands::Stop(_) => Some("stop a training run or a service"),
        Commands::Notebook(_) => Some("start a notebook"),
        Commands::Tensorboard(_) => Some("start TensorBoard"),
        Commands::Triton(_) => Some("start a Triton server"),
        Commands::Pull { .. } => Some("pull an image"),
        Commands::Shell(args) if args.list => None,
        Commands::Shell(args) if args.attach.is_some() => {
            Some("re-enter (and start, if stopped) a kept shell container")
        }
        Commands::Shell(_) => Some("create a shell container"),
        Commands::Gpus { .. }
        | Commands::Containers { .. }
        | Commands::Images { .. }
        | Commands::Compat { .. }
        | Commands::Doctor { .. }
        | Commands::Runs { .. }
        | Commands::Services { .. }
        | Commands::Logs(_)
        | Commands::Export(_)
        | Commands::Serve { .. }
        | Commands::Completions { .. }
        | Commands::Man
        | Commands::Supervise { .. } => None,
    }
}

/// The subcommand's name as typed.
fn name_of(command: &Commands) -> &'static str {
    match command {
        Commands::Run(_) => "run",
        Commands::Rerun(_) => "rerun",
        Commands::Stop(_) => "stop",
        Commands::Notebook(_) => "notebook",
        Commands::Tensorboard(_) => "tensorboard",
        Commands::Triton(_) => "triton",
        Commands::Pull { .. } => "pull",
        Commands::Shell(args) if args.attach.is_some() => "shell --attach",
        Commands::Shell(_) => "shell",
        _ => "this command",
    }
}

/// The refusal for `command` in read-only mode, wrapped to `width` columns; `None` when it is
/// allowed (read-only mode off, or a command that changes nothing).
pub fn refusal(command: &Commands, mode: ReadOnly<'_>, width: usize) -> Option<String> {
    if !mode.is_on() {
        return None;
    }
    let what = what_it_changes(command)?;
    let why = match (mode.flag, mode.config) {
        (true, None) => "--read-only was given".to_string(),
        (false, Some(file)) => format!("`read_only = true` is set in {}", file.display()),
        (true, Some(file)) => format!(
            "--read-only was given and `read_only = true` is set in {}",
            file.display()
        ),
        (false, None) => return None,
    };
    let mut lift = Vec::new();
    if mode.flag {
        lift.push("run it without --read-only".to_string());
    }
    if let Some(file) = mode.config {
        lift.push(format!(
            "set `read_only = false` under [general] in {} (or pass --config with a file \
             that does not set it)",
            file.display()
        ));
    }
    let text = format!(
        "gpudeck: refused: `gpudeck {}` would {what}, and read-only mode allows nothing \
         that changes the machine ({why}). To do it, {}.",
        name_of(command),
        lift.join(", and ")
    );
    Some(crate::output::wrap_to(&text, "", width))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

    fn command(args: &[&str]) -> Commands {
        let mut argv = vec!["gpudeck"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
            .expect("parses")
            .command
            .expect("a subcommand")
    }

    const FLAG: ReadOnly<'static> = ReadOnly {
        flag: true,
        config: None,
    };

    #[test]
    fn every_command_that_changes_the_machine_is_refused_and_readers_are_not() {
        for args in [
            &["run", "--", "true"][..],
            &["rerun", "x"],
            &["stop", "x"],
            &["pull", "busybox"],
            &["shell", "busybox"],
            &["shell", "--attach", "mine"],
            &["notebook", "--host"],
            &["tensorboard", "x"],
            &["triton", "models"],
        ] {
            assert!(refusal(&command(args), FLAG, 80).is_some(), "{args:?}");
        }
        for args in [
            &["gpus"][..],
            &["runs"],
            &["logs", "x"],
            &["export", "x", "--format", "csv"],
            &["shell", "--list"],
            &["run", "--on", "slurm", "--dry-run", "--", "true"],
            &["serve", "--metrics", "127.0.0.1:0"],
        ] {
            assert_eq!(refusal(&command(args), FLAG, 80), None, "{args:?}");
        }
    }

    /// A command line of every subcommand, the fewest arguments it takes.
    const EVERY_SUBCOMMAND: &[&[&str]] = &[
        &["gpus"],
        &["containers"],
        &["images"],
        &["compat"],
        &["doctor"],
        &["pull", "busybox"],
        &["shell", "busybox"],
        &["run", "--", "true"],
        &["runs"],
        &["logs", "x"],
        &["stop", "x"],
        &["notebook", "--host"],
        &["tensorboard", "x"],
        &["triton", "models"],
        &["services"],
        &["export", "x", "--format", "csv"],
        &["rerun", "x"],
        &["serve", "--metrics", "127.0.0.1:0"],
        &["completions", "bash"],
        &["man"],
        &["__supervise", "/tmp/x"],
    ];

    /// `--help` names what the refusal refuses: the same list, and every command in it is
    /// refused (and no other), so neither can leave one out.
    #[test]
    fn the_help_names_exactly_the_commands_that_are_refused() {
        use clap::CommandFactory;
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let listed: Vec<&str> = EVERY_SUBCOMMAND.iter().map(|args| args[0]).collect();
        assert_eq!(names, listed, "every subcommand, in clap's order");
        for args in EVERY_SUBCOMMAND {
            let refused = refusal(&command(args), FLAG, 80).is_some();
            let named = crate::cli::CHANGES_THE_MACHINE.contains(&args[0]);
            assert_eq!(
                refused, named,
                "{args:?}: refused {refused}, named in --help {named}"
            );
        }
        let help = Cli::command()
            .render_long_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            help.contains(
                "and the run, rerun, stop, pull, shell, notebook, tensorboard and triton commands"
            ),
            "{help}"
        );
    }

    #[test]
    fn nothing_is_refused_when_the_mode_is_off() {
        let off = ReadOnly {
            flag: false,
            config: None,
        };
        assert_eq!(refusal(&command(&["stop", "x"]), off, 80), None);
    }

    #[test]
    fn the_refusal_says_why_and_how_to_lift_it_within_80_columns() {
        let file = Path::new("/home/someone/.config/gpudeck/config.toml");
        let both = ReadOnly {
            flag: true,
            config: Some(file),
        };
        let text = refusal(&command(&["pull", "busybox"]), both, 80).unwrap();
        let flat = text.replace('\n', " ");
        assert!(
            flat.contains("`gpudeck pull` would pull an image"),
            "{text}"
        );
        assert!(flat.contains("without --read-only"), "{text}");
        assert!(
            flat.contains(
                "`read_only = false` under [general] in /home/someone/.config/gpudeck/config.toml"
            ),
            "{text}"
        );
        assert!(
            text.lines()
                .all(|l| l.chars().count() <= crate::output::MESSAGE_WIDTH),
            "{text}"
        );
    }
}
