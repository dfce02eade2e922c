//! What `gpudeck run X ...` means when X is not (only) a spec file: a script is run as the user
//! clearly means (`train.py` as `python train.py`), and a program name, whose flags would be read
//! as gpudeck's, is answered with the exact command to type (`gpudeck run -- python train.py`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::runs::RunError;

/// What the positional arguments of `gpudeck run` come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The spec file to load, if one was named.
    pub spec: Option<PathBuf>,
    /// The command: the script's, or what came after `--`.
    pub command: Vec<String>,
    /// How a script is run, to tell the user.
    pub note: Option<String>,
    /// The run's default name: the script's, not its interpreter's.
    pub name: Option<String>,
}

/// What interpreting the arguments looks at besides them.
pub struct Surroundings<'a> {
    /// The whole command line as typed (argv), for the command to suggest.
    pub argv: &'a [String],
    /// PATH, to pick `python` or `python3`.
    pub path: Option<&'a OsStr>,
    /// Whether `--workdir` was given: a script named relative to here is then made absolute.
    pub workdir_given: bool,
}

/// Interprets `positional` (before `--`) and `after` (the command after `--`).
pub fn interpret(
    positional: &[String],
    after: &[String],
    around: &Surroundings<'_>,
) -> Result<Target, RunError> {
    let Some(first) = positional.first() else {
        return Ok(plain(None, after));
    };
    let file = Path::new(first);
    let extension = file.extension().and_then(OsStr::to_str).unwrap_or("");
    let meta = std::fs::metadata(file).ok().filter(|m| m.is_file());
    let executable = meta
        .as_ref()
        .is_some_and(|m| m.permissions().mode() & 0o111 != 0);
    let script = matches!(extension, "py" | "sh") || executable;
    if meta.is_none() && script {
        return Err(RunError::ScriptMissing {
            script: first.clone(),
        });
    }
    if extension == "toml" || (meta.is_some() && !script) {
        if positional.len() > 1 {
            return Err(RunError::ExtraAfterSpec {
                spec: first.clone(),
                extra: positional[1..].join(" "),
            });
        }
        return Ok(plain(Some(file.to_path_buf()), after));
    }
    if meta.is_none() {
        return Err(RunError::CommandBeforeDashes {
            program: first.clone(),
            suggestion: suggestion(around.argv, positional),
        });
    }
    if !after.is_empty() {
        return Err(RunError::ScriptAndCommand {
            script: first.clone(),
        });
    }
    let shown = script_path(first, around.workdir_given);
    let mut command = match (extension, executable) {
        ("py", _) => vec![python(around.path).to_string(), shown],
        ("sh", false) => vec!["bash".to_string(), shown],
        _ if first.contains('/') || around.workdir_given => vec![shown],
        _ => vec![format!("./{first}")],
    };
    command.extend(positional[1..].iter().cloned());
    let note = format!("running {first} as `{}`", quoted(&command));
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    Ok(Target {
        spec: None,
        command,
        note: Some(note),
        name,
    })
}

fn plain(spec: Option<PathBuf>, after: &[String]) -> Target {
    Target {
        spec,
        command: after.to_vec(),
        note: None,
        name: None,
    }
}

/// The script as the run will name it: absolute when the run goes to another directory.
fn script_path(script: &str, workdir_given: bool) -> String {
    if !workdir_given {
        return script.to_string();
    }
    std::path::absolute(script)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| script.to_string())
}

/// `python` where PATH has it, else `python3` (Debian and Ubuntu ship only that), else `python`
/// so that pre-flight says it is missing.
fn python(path: Option<&OsStr>) -> &'static str {
    let on_path = |name: &str| {
        path.is_some_and(|p| {
            std::env::split_paths(p).any(|dir| {
                std::fs::metadata(dir.join(name))
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
        })
    };
    match (on_path("python"), on_path("python3")) {
        (false, true) => "python3",
        _ => "python",
    }
}

/// For a command line clap refused at `argv[at]`, a flag `gpudeck run` does not know: when the
/// words before it name a program or a script, the command to type, with that flag and the rest
/// after `--` as the program's own. `None` when they name a spec (the flag is a plain mistake).
pub fn unknown_flag_hint(
    positional: &[String],
    argv: &[String],
    at: usize,
    around: &Surroundings<'_>,
) -> Option<String> {
    let program = match interpret(positional, &[], around) {
        Err(RunError::CommandBeforeDashes { .. }) => positional.to_vec(),
        Ok(script) if script.note.is_some() => script.command,
        _ => return None,
    };
    let mut words = before_dashes(&argv[..at], positional);
    words.push("--".into());
    words.extend(program);
    words.extend(argv[at..].iter().cloned());
    Some(format!(
        "gpudeck: `{}` is not a flag of gpudeck run; the program's own flags go after `--`.\n\
         To run it, type:\n  gpudeck {}",
        argv[at],
        quoted(&words)
    ))
}

/// The command line as typed, with the program and its arguments moved after `--`.
fn suggestion(argv: &[String], positional: &[String]) -> String {
    let mut words = before_dashes(argv, positional);
    words.push("--".into());
    words.extend(positional.iter().cloned());
    format!("gpudeck {}", quoted(&words))
}

/// The words of `argv` after the program, less the positional words after `run`.
fn before_dashes(argv: &[String], positional: &[String]) -> Vec<String> {
    let run_at = argv.iter().position(|a| a == "run").unwrap_or(argv.len());
    let mut left: Vec<String> = argv.iter().skip(1).take(run_at).cloned().collect();
    let mut pending = positional.iter().peekable();
    for arg in argv.iter().skip(run_at + 1) {
        if pending.peek().is_some_and(|p| *p == arg) {
            pending.next();
        } else {
            left.push(arg.clone());
        }
    }
    left
}

/// Words joined as a POSIX shell would read them back.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_program_name_is_answered_with_the_command_to_type() {
        let argv = strings(&["/usr/bin/gpudeck", "run", "--gpus", "0", "python", "t.py"]);
        let around = Surroundings {
            argv: &argv,
            path: None,
            workdir_given: false,
        };
        let err = interpret(&strings(&["python", "t.py"]), &[], &around).unwrap_err();
        let RunError::CommandBeforeDashes { suggestion, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(suggestion, "gpudeck run --gpus 0 -- python t.py");
    }

    #[test]
    fn a_flag_after_the_program_is_moved_after_the_dashes_with_it() {
        let argv = strings(&["gpudeck", "run", "python", "t.py", "--epochs", "3"]);
        let around = Surroundings {
            argv: &argv,
            path: None,
            workdir_given: false,
        };
        let hint = unknown_flag_hint(&strings(&["python", "t.py"]), &argv, 4, &around);
        assert_eq!(
            hint.unwrap().lines().last(),
            Some("  gpudeck run -- python t.py --epochs 3")
        );
        let spec = unknown_flag_hint(&strings(&["run.toml"]), &argv, 4, &around);
        assert_eq!(spec, None, "a spec's unknown flag is clap's to explain");
    }

    #[test]
    fn a_spec_stays_a_spec_and_a_missing_script_is_named() {
        let around = Surroundings {
            argv: &[],
            path: None,
            workdir_given: false,
        };
        let spec = interpret(&strings(&["run.toml"]), &strings(&["x"]), &around).unwrap();
        assert_eq!(spec.spec, Some(PathBuf::from("run.toml")));
        assert_eq!(spec.command, strings(&["x"]));
        let missing = interpret(&strings(&["/nonexistent/t.py"]), &[], &around).unwrap_err();
        assert!(
            matches!(missing, RunError::ScriptMissing { .. }),
            "{missing:?}"
        );
    }
}
