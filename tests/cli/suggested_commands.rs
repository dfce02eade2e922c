//! Every command gpudeck suggests works: each `gpudeck …` command line in the messages and help
//! texts of the source, in `--help`, and in docs/*.md and the README is parsed with the clap
//! definition itself (`Cli::try_parse_from`). Placeholders (IMAGE, RUN, `{id}`, …) become sample
//! values, a synopsis's `[optional]` parts and `a|b` choices are taken as written (the first
//! choice), and what a shell adds (`| less`, `> file`, `# comment`) is cut off.
//!
//! The messages (the source's string literals, outside its tests) are held to whole command
//! lines: `gpudeck pull` there is a suggestion to type, and must parse. Prose (docs, comments,
//! `--help`) may also name a command without its arguments (`gpudeck stop` sends SIGINT …): such
//! a name must still be a real subcommand with real flags, missing only what it needs. A message
//! suggests its commands in backticks, so they can be found (and copied) whole.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use gpudeck::cli::Cli;

/// Spans that name a command without being a command line to type: each says why.
const NAMES_NOT_SUGGESTIONS: &[(&str, &str)] = &[
    (
        "gpudeck __supervise DIR",
        "the supervisor's hidden command line, described in architecture.md",
    ),
    (
        "gpudeck serve",
        "metrics/server.rs: the port is taken by \"another `gpudeck serve` or exporter\": a \
         process already running, not a command to type",
    ),
];

/// Where a command line was found, the line as written, and whether it may be a command's
/// name rather than a whole command line (prose, not a message).
#[derive(Debug)]
struct Found {
    place: String,
    line: String,
    may_name: bool,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `text`'s spans in backticks that start with `gpudeck `.
fn backticked(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut parts = text.split('`');
    // The text before the first backtick is outside a span; then spans and gaps alternate.
    parts.next();
    while let Some(span) = parts.next() {
        if span.starts_with("gpudeck ") && !span.contains('\n') {
            spans.push(span.to_string());
        }
        parts.next();
    }
    spans
}

/// The `gpudeck …` lines of fenced code blocks of commands: shell blocks and untagged ones (a
/// shell's `$ ` prompt taken off; in a `console` block only the prompt's lines); a `text` block is
/// a screen or an output, not commands.
fn fenced(text: &str) -> Vec<String> {
    let mut inside = false;
    let mut commands = false;
    let mut console = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if let Some(tag) = line.trim_start().strip_prefix("```") {
            inside = !inside;
            commands = matches!(tag.trim(), "" | "sh" | "bash" | "shell" | "console");
            console = tag.trim() == "console";
            continue;
        }
        if !commands {
            continue;
        }
        let line = line.trim();
        // A console block has commands after its prompt and output without one.
        let line = match (console, line.strip_prefix("$ ")) {
            (_, Some(command)) => command,
            (true, None) => continue,
            (false, None) => line,
        };
        if inside && line.starts_with("gpudeck ") {
            lines.push(line.to_string());
        }
    }
    lines
}

/// The string literals of a Rust file, its messages, one per item, escapes read.
fn string_literals(source: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut out = String::new();
    let mut chars = source.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (false, '/') if chars.peek() == Some(&'/') => {
                // A comment: to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            (false, '\'') => {
                // A char literal ('"') or a lifetime: skip a quoted char.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\"'") || rest.starts_with("\\\"") {
                    chars.next();
                    chars.next();
                }
            }
            (false, '"') => in_string = true,
            (true, '\\') => match chars.next() {
                // A line continuation: the newline and the next line's indent are not in it.
                Some('\n') => {
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                }
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            (true, '"') => {
                in_string = false;
                literals.push(std::mem::take(&mut out));
            }
            (true, c) => out.push(c),
            _ => {}
        }
    }
    literals
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every suggested command line: the source's messages and comments, `--help` of gpudeck and of
/// each subcommand, the docs and the README.
fn every_suggestion() -> Vec<Found> {
    let mut found = Vec::new();
    let mut add = |place: String, lines: Vec<String>, may_name: bool| {
        found.extend(lines.into_iter().map(|line| Found {
            place: place.clone(),
            line,
            may_name,
        }));
    };
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let place = file.strip_prefix(root()).unwrap().display().to_string();
        add(place.clone(), backticked(&text), true);
        // The messages: string literals before the file's tests (at its end, by custom).
        let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        for message in string_literals(code) {
            add(place.clone(), backticked(&message), false);
        }
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.push(root().join("README.md"));
    docs.sort();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let place = doc.strip_prefix(root()).unwrap().display().to_string();
        add(place.clone(), backticked(&text), true);
        add(place, fenced(&text), false);
    }
    let mut cli = Cli::command();
    let help = cli.render_long_help().to_string();
    add("gpudeck --help".into(), backticked(&help), true);
    for sub in cli.get_subcommands_mut() {
        let help = sub.render_long_help().to_string();
        add(
            format!("gpudeck {} --help", sub.get_name()),
            backticked(&help),
            true,
        );
    }
    found
}

/// A placeholder's sample value: one that the flag it follows accepts.
fn sample(placeholder: &str) -> String {
    match placeholder {
        "ADDR" => "127.0.0.1:9400",
        "N" | "G" => "1",
        "SECS" => "10",
        "MS" => "500",
        "SIZE" => "20GiB",
        "IMAGE" => "nvcr.io/nvidia/pytorch:24.05-py3",
        "URI" => "unix:///var/run/docker.sock",
        _ => "sample",
    }
    .to_string()
}

fn is_placeholder(word: &str) -> bool {
    let stem = word.strip_suffix(".toml").unwrap_or(word);
    // A number (`--rank 1`) is a value, not a placeholder: a placeholder has a capital letter.
    (stem.chars().any(|c| c.is_ascii_uppercase())
        && stem
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
        || (word.starts_with('{') && word.ends_with('}'))
}

/// `line` as argv: a description after two spaces and shell operators with what follows cut off, `[optional]` parts kept (the first
/// of `a | b`), `a|b` the first choice, `X...` one X, placeholders replaced by samples.
fn argv(line: &str) -> Vec<String> {
    // A synopsis's description starts after a run of spaces, as a comment does in a code block.
    let line = line.split("  ").next().unwrap_or_default();
    let mut line = line.to_string();
    for operator in [" | ", " > ", " && ", " # ", "; "] {
        // A `|` inside brackets is a synopsis's choice, not a pipe.
        if let Some(at) = outside_brackets(&line, operator) {
            line.truncate(at);
        }
    }
    while let Some(open) = line.rfind('[') {
        let Some(close) = line[open..].find(']').map(|c| open + c) else {
            break;
        };
        let choice = line[open + 1..close]
            .split(" | ")
            .next()
            .unwrap_or_default()
            .to_string();
        line.replace_range(open..=close, &choice);
    }
    line.split_whitespace()
        .filter(|w| !matches!(*w, "..." | "…" | "OPTIONS"))
        .map(|w| {
            // A format argument appended to a word (`--host{gpus}`) adds words of its own.
            let w = match w.find('{') {
                Some(at) if at > 0 => &w[..at],
                _ => w,
            };
            let w = w.trim_end_matches("...").trim_end_matches('…');
            let w = match w.contains("://") {
                true => w,
                false => w.split('|').next().unwrap_or(w),
            };
            match is_placeholder(w) {
                true => sample(w.trim_matches(['{', '}'])),
                false => w.to_string(),
            }
        })
        .collect()
}

fn outside_brackets(line: &str, operator: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (at, c) in line.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 && line[at..].starts_with(operator) => return Some(at),
            _ => {}
        }
    }
    None
}

/// A parse that failed only for what a command's name leaves out: its required arguments, or
/// the value of a flag named on its own (`gpudeck run --launcher`).
fn names_a_command(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::MissingRequiredArgument => true,
        ErrorKind::InvalidValue => e.to_string().contains("a value is required"),
        _ => false,
    }
}

#[test]
fn every_suggested_command_parses_with_the_cli_definition() {
    let found = every_suggestion();
    assert!(
        found.len() > 100,
        "the collection found too few command lines to be working: {}",
        found.len()
    );
    let mut failures = Vec::new();
    for f in &found {
        if NAMES_NOT_SUGGESTIONS
            .iter()
            .any(|(name, _)| f.line == *name)
        {
            continue;
        }
        // `gpudeck {}`: the subcommand itself is filled in at run time.
        if f.line
            .split_whitespace()
            .nth(1)
            .is_some_and(|w| w.starts_with('{'))
        {
            continue;
        }
        let args = argv(&f.line);
        if let Err(e) = Cli::try_parse_from(&args) {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                continue;
            }
            if f.may_name && names_a_command(&e) {
                continue;
            }
            let why = e.to_string();
            let first = why.lines().next().unwrap_or_default().to_string();
            failures.push(format!("{}: `{}` ({args:?}): {first}", f.place, f.line));
        }
    }
    assert!(
        failures.is_empty(),
        "{} suggested commands do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The pieces above on the forms they meet, so a collection that finds nothing cannot pass.
#[test]
fn suggestions_are_found_in_backticks_code_blocks_and_messages_and_read_as_typed() {
    assert_eq!(
        backticked("run `gpudeck logs RUN -f | grep loss` or `docker ps`"),
        ["gpudeck logs RUN -f | grep loss"]
    );
    assert_eq!(
        fenced("text\n```sh\n$ gpudeck gpus --json   # once\nls\n```\ngpudeck gpus\n"),
        ["gpudeck gpus --json   # once"]
    );
    assert_eq!(
        fenced("```text\ngpudeck │ vm │ driver 580\n```\n"),
        Vec::<String>::new(),
        "a screen is not a command"
    );
    assert_eq!(
        string_literals("let a = \"x `gpudeck stop {}` \\\n  y\\n\"; // \"no\"\nlet c = '\"';"),
        ["x `gpudeck stop {}` y\n"]
    );
    assert_eq!(argv("gpudeck [OPTIONS]   the dashboard"), ["gpudeck"]);
    assert_eq!(
        argv("gpudeck notebook --host{gpus}"),
        ["gpudeck", "notebook", "--host"]
    );
    assert_eq!(
        argv("gpudeck export RUN --format csv|json [--output FILE] [--show-secrets]"),
        [
            "gpudeck",
            "export",
            "sample",
            "--format",
            "csv",
            "--output",
            "sample",
            "--show-secrets"
        ]
    );
    assert_eq!(
        argv("gpudeck tensorboard RUN|DIR [--host | --image IMAGE] [--port N] | less"),
        ["gpudeck", "tensorboard", "sample", "--host", "--port", "1"]
    );
    assert_eq!(
        argv("gpudeck serve --metrics ADDR"),
        ["gpudeck", "serve", "--metrics", "127.0.0.1:9400"]
    );
    // What the test exists for: this was suggested in a message and did not parse; as a name in
    // prose it is one, a misspelt one is not.
    let error = Cli::try_parse_from(argv("gpudeck pull")).unwrap_err();
    assert!(names_a_command(&error));
    let error = Cli::try_parse_from(argv("gpudeck pul")).unwrap_err();
    assert!(!names_a_command(&error));
    let error = Cli::try_parse_from(argv("gpudeck run --launcher")).unwrap_err();
    assert!(names_a_command(&error));
    assert!(Cli::try_parse_from(argv("gpudeck logs {} -f")).is_ok());
}

/// Where the GPUs cannot be read, pre-flight's fix says "`--gpus none` runs it without GPUs";
/// every command that can meet that refusal takes it (`rerun` too).
#[test]
fn every_command_that_is_told_to_use_gpus_none_takes_it() {
    for command in [
        "gpudeck run --gpus none -- python train.py",
        "gpudeck rerun RUN --gpus none",
        "gpudeck shell IMAGE --gpus none",
        "gpudeck notebook IMAGE --gpus none",
        "gpudeck tensorboard RUN --gpus none",
        "gpudeck triton MODEL_REPOSITORY --image IMAGE --gpus none",
    ] {
        let parsed = Cli::try_parse_from(argv(command));
        assert!(parsed.is_ok(), "{command}: {:?}", parsed.err());
    }
}
