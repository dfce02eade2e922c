//! The command torchrun is handed. torchrun (PyTorch's `torch/distributed/run.py`) takes the
//! training script as its first positional argument and starts every worker as
//! `<its own python> -u [-m] <script> <args...>`; with `--no-python` it runs the script itself as
//! the program, and `--no-python` with `-m` is an error ("Don't use both the '--no-python' flag
//! and the '--module' flag at the same time."). So `torchrun python train.py` runs a file named
//! `python`, and `torchrun run.sh` runs a shell script with Python. A run's command as a person
//! writes it (`python train.py`, `python -m pkg`, `train.py`, `./run.sh`, `bash run.sh`) is turned
//! here into what torchrun expects, and what cannot work is refused with the command that would.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What a file the command names is, as far as torchrun cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A Python script: `.py`/`.pyz`/`.pyc`, or a `#!...python...` first line.
    Python,
    /// Any other file that can be executed (a shell script, a binary).
    Executable,
    /// A file that is neither: it would need its interpreter named.
    NotExecutable,
    /// A directory.
    Directory,
    /// Nothing there, and not a program on PATH either.
    Missing,
    /// A program found on PATH (not a file in the work dir).
    OnPath,
    /// Cannot be looked at from here (a container's file system): judged by its name.
    Unknown,
}

/// Why a command cannot run under torchrun, and the command that would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub why: String,
    pub instead: String,
}

/// The arguments after torchrun's own options for `command`; `kind` says what a program or
/// script name is (see [`probe`]).
pub fn torchrun_args(
    command: &[String],
    kind: &dyn Fn(&str) -> FileKind,
) -> Result<Vec<String>, Refusal> {
    let Some((program, rest)) = command.split_first() else {
        return Err(Refusal {
            why: "there is no command".into(),
            instead: "gpudeck run --launcher torchrun -- python train.py".into(),
        });
    };
    if is_python(program) {
        return python_args(program, rest, kind);
    }
    let script = || {
        let mut args = vec![program.clone()];
        args.extend(rest.iter().cloned());
        args
    };
    let no_python = || {
        let mut args = vec!["--no-python".to_string()];
        args.extend(script());
        args
    };
    match kind(program) {
        FileKind::Python => Ok(script()),
        FileKind::Executable | FileKind::OnPath => Ok(no_python()),
        FileKind::Unknown if is_python_name(program) => Ok(script()),
        FileKind::Unknown => Ok(no_python()),
        FileKind::NotExecutable => Err(Refusal {
            why: format!(
                "{program} is neither a Python script nor executable, and torchrun would run it \
                 with Python"
            ),
            instead: with_command(&format!("sh {}", quote_all(&script()))),
        }),
        FileKind::Directory => Err(Refusal {
            why: format!("{program} is a directory"),
            instead: with_command("python train.py"),
        }),
        FileKind::Missing => Err(Refusal {
            why: format!("{program} is neither a file in the work directory nor on PATH"),
            instead: with_command("python train.py"),
        }),
    }
}

/// `python [options] (script | -m module | -c code) args...`: torchrun brings its own
/// interpreter (the one torch is installed in) and its own `-u`, so a bare `python` with no
/// option but `-u` is dropped. An interpreter given by path, or with other options, is kept as
/// written and run with `--no-python` (with `-u` added, so lines reach the log as printed).
fn python_args(
    program: &str,
    rest: &[String],
    kind: &dyn Fn(&str) -> FileKind,
) -> Result<Vec<String>, Refusal> {
    let mut i = 0;
    let mut other_options = false;
    let mut unbuffered = false;
    let mut target = None;
    while i < rest.len() {
        let arg = rest[i].as_str();
        match arg {
            "-u" => unbuffered = true,
            "-m" | "-c" => {
                target = Some((arg, rest.get(i + 1).cloned(), i + 2));
                break;
            }
            "--" => {
                target = Some(("script", rest.get(i + 1).cloned(), i + 2));
                break;
            }
            "-" => {
                return Err(Refusal {
                    why: "every worker would read its program from standard input, which a run \
                          does not have"
                        .into(),
                    instead: with_command("python train.py"),
                });
            }
            // Options that take the next argument.
            "-W" | "-X" | "--check-hash-based-pycs" => {
                other_options = true;
                i += 1;
            }
            _ if arg.starts_with("-m") || arg.starts_with("-c") => {
                let (flag, value) = arg.split_at(2);
                target = Some((flag, Some(value.to_string()), i + 1));
                break;
            }
            _ if arg.starts_with('-') => other_options = true,
            _ => {
                target = Some(("script", Some(arg.to_string()), i + 1));
                break;
            }
        }
        i += 1;
    }
    let Some((form, Some(name), after)) = target else {
        return Err(Refusal {
            why: format!("`{program}` names no script or module to run"),
            instead: with_command("python train.py"),
        });
    };
    let args = &rest[after.min(rest.len())..];
    if form == "script" && matches!(kind(&name), FileKind::Missing | FileKind::OnPath) {
        return Err(Refusal {
            why: format!("the script {name} is not in the work directory"),
            instead: with_command(&format!("python {}", quote(&name))),
        });
    }
    let keep_interpreter = program.contains('/') || other_options || form == "-c";
    if keep_interpreter {
        let mut out = vec!["--no-python".to_string(), program.to_string()];
        if !unbuffered {
            out.push("-u".into());
        }
        out.extend(rest.iter().cloned());
        return Ok(out);
    }
    let mut out = Vec::new();
    if form == "-m" {
        out.push("-m".to_string());
    }
    out.push(name);
    out.extend(args.iter().cloned());
    Ok(out)
}

/// What `name` is, looked at from `workdir` (a file there first, as torchrun reads its script
/// argument as a path), else on `path`.
pub fn probe(name: &str, workdir: &Path, path: Option<&std::ffi::OsStr>) -> FileKind {
    let file = workdir.join(name);
    match std::fs::metadata(&file) {
        Ok(m) if m.is_dir() => return FileKind::Directory,
        Ok(m) => {
            if is_python_name(name) || python_shebang(&file) {
                return FileKind::Python;
            }
            return if m.permissions().mode() & 0o111 != 0 {
                FileKind::Executable
            } else {
                FileKind::NotExecutable
            };
        }
        Err(_) => {}
    }
    if name.contains('/') {
        return FileKind::Missing;
    }
    let on_path = path.is_some_and(|path| {
        std::env::split_paths(path).any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    });
    if on_path {
        FileKind::OnPath
    } else {
        FileKind::Missing
    }
}

fn python_shebang(file: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 128];
    let Ok(mut f) = std::fs::File::open(file) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    let first = head[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    first.starts_with(b"#!") && String::from_utf8_lossy(first).contains("python")
}

fn is_python_name(name: &str) -> bool {
    [".py", ".pyz", ".pyc"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// `python`, `python3`, `python3.12`, or a path to one.
fn is_python(program: &str) -> bool {
    let base = program.rsplit('/').next().unwrap_or(program);
    let Some(version) = base.strip_prefix("python") else {
        return false;
    };
    version.chars().all(|c| c.is_ascii_digit() || c == '.')
}

fn with_command(command: &str) -> String {
    format!("gpudeck run --launcher torchrun -- {command}")
}

fn quote_all(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

fn quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &str, kind: FileKind) -> Result<Vec<String>, Refusal> {
        let command: Vec<String> = command.split(' ').map(String::from).collect();
        torchrun_args(&command, &|_| kind)
    }

    fn ok(command: &str, kind: FileKind) -> String {
        args(command, kind).unwrap().join(" ")
    }

    #[test]
    fn a_leading_python_is_dropped_since_torchrun_runs_python_u_itself() {
        assert_eq!(
            ok("python train.py --lr 0.1", FileKind::Python),
            "train.py --lr 0.1"
        );
        assert_eq!(ok("python3 -u train.py", FileKind::Python), "train.py");
        assert_eq!(
            ok("python3.12 train.py -m x", FileKind::Python),
            "train.py -m x"
        );
    }

    #[test]
    fn python_m_becomes_torchruns_module_flag() {
        assert_eq!(
            ok("python -m pkg.train --epochs 2", FileKind::Missing),
            "-m pkg.train --epochs 2"
        );
        assert_eq!(ok("python -u -mpkg", FileKind::Missing), "-m pkg");
    }

    #[test]
    fn the_script_form_is_kept_and_other_programs_run_with_no_python() {
        assert_eq!(ok("train.py --lr 1", FileKind::Python), "train.py --lr 1");
        assert_eq!(
            ok("./run.sh a", FileKind::Executable),
            "--no-python ./run.sh a"
        );
        assert_eq!(
            ok("bash run.sh", FileKind::OnPath),
            "--no-python bash run.sh"
        );
        // In a container only the name can be judged.
        assert_eq!(ok("train.py", FileKind::Unknown), "train.py");
        assert_eq!(ok("./run.sh", FileKind::Unknown), "--no-python ./run.sh");
    }

    #[test]
    fn an_interpreter_by_path_or_with_options_is_kept_with_no_python_and_u() {
        assert_eq!(
            ok("/opt/venv/bin/python train.py", FileKind::Python),
            "--no-python /opt/venv/bin/python -u train.py"
        );
        assert_eq!(
            ok("python -X faulthandler train.py", FileKind::Python),
            "--no-python python -u -X faulthandler train.py"
        );
        assert_eq!(
            ok("python -u -c print(1)", FileKind::Missing),
            "--no-python python -u -c print(1)"
        );
    }

    #[test]
    fn what_cannot_work_is_refused_with_the_command_that_would() {
        let refused = args("run.sh", FileKind::NotExecutable).unwrap_err();
        assert!(
            refused
                .why
                .contains("neither a Python script nor executable"),
            "{refused:?}"
        );
        assert_eq!(
            refused.instead,
            "gpudeck run --launcher torchrun -- sh run.sh"
        );
        let refused = args("python", FileKind::Missing).unwrap_err();
        assert!(
            refused.why.contains("names no script or module"),
            "{refused:?}"
        );
        let refused = args("python -u", FileKind::Missing).unwrap_err();
        assert!(
            refused.why.contains("names no script or module"),
            "{refused:?}"
        );
        let refused = args("python tain.py", FileKind::Missing).unwrap_err();
        assert_eq!(
            refused.why,
            "the script tain.py is not in the work directory"
        );
        let refused = args("nosuch", FileKind::Missing).unwrap_err();
        assert!(refused.why.contains("neither a file"), "{refused:?}");
        assert!(args("python -", FileKind::Missing).is_err());
    }

    #[test]
    fn files_are_probed_in_the_workdir_then_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str, mode: u32| {
            let file = dir.path().join(name);
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write("train.py", "import torch\n", 0o644);
        write("tool", "#!/usr/bin/env python3\nprint(1)\n", 0o755);
        write("run.sh", "#!/bin/sh\necho hi\n", 0o755);
        write("notes.sh", "echo hi\n", 0o644);
        let bin = tempfile::tempdir().unwrap();
        let on_path = bin.path().join("mybin");
        std::fs::write(&on_path, "x").unwrap();
        std::fs::set_permissions(&on_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = Some(bin.path().as_os_str());
        let kind = |name| probe(name, dir.path(), path);
        assert_eq!(kind("train.py"), FileKind::Python);
        assert_eq!(kind("./tool"), FileKind::Python);
        assert_eq!(kind("run.sh"), FileKind::Executable);
        assert_eq!(kind("notes.sh"), FileKind::NotExecutable);
        assert_eq!(kind("mybin"), FileKind::OnPath);
        assert_eq!(kind("./mybin"), FileKind::Missing);
        assert_eq!(kind("nosuch"), FileKind::Missing);
        assert_eq!(kind("."), FileKind::Directory);
    }
}
