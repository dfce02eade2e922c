//! The layers hold: nothing below the TUI (`app/`, `ui/`) names it, so sources, collectors and
//! domain types can be read, tested and reused without the dashboard.

use std::path::{Path, PathBuf};

/// The top of the program, which may use everything: the TUI itself, the CLI definition, the
/// binary and the crate root (and this file, whose examples name the TUI's modules).
const ABOVE: &[&str] = &[
    "app",
    "ui",
    "cli",
    "cli_docs.rs",
    "main.rs",
    "lib.rs",
    "layers_tests.rs",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ can be read") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` that name the TUI's modules from below it.
fn upward_imports(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter(|l| {
            ["crate::app", "crate::ui", "gpudeck::app", "gpudeck::ui"]
                .iter()
                .any(|m| l.contains(&format!("{m}::")) || l.contains(&format!("{m};")))
        })
        .map(String::from)
        .collect()
}

#[test]
fn no_module_below_the_tui_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut below = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src/ can be read") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if ABOVE.contains(&name) {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, &mut below);
        } else if name.ends_with(".rs") {
            below.push(path);
        }
    }
    assert!(below.len() > 100, "the walk found the domain modules");
    let found: Vec<String> = below
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a source file can be read");
            upward_imports(&text)
                .into_iter()
                .map(move |l| format!("{}: {l}", path.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules below app/ and ui/ import them:\n{}",
        found.join("\n")
    );
}

#[test]
fn an_upward_import_is_found() {
    assert_eq!(
        upward_imports("use crate::app::pulls::PullOutcome;\n// crate::ui::x in a comment\n"),
        ["use crate::app::pulls::PullOutcome;"]
    );
    assert_eq!(upward_imports("use crate::ui;"), ["use crate::ui;"]);
    assert!(upward_imports("use crate::units::plural;\nuse crate::application;").is_empty());
}
