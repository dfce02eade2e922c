//! The layers hold: nothing below the TUI (`app/`, `ui/`) names it, no two files import each
//! other, and imports run from higher layers down to lower ones, so sources, collectors and
//! domain types can be read, tested and reused without the dashboard.
//!
//! The graph they check is read from the source text by `imports`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod imports;

use imports::{
    absolute, declared_modules, import_graph, paths, source_files, strip_comments_and_strings,
    tokens, without_test_items, SourceFile,
};

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

/// The layers, lowest first, by top-level module (a folder under `src/` or a file directly in
/// it). A file may import from its own layer and the layers below it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "plumbing: units, terminal output, logging, private files",
        &[
            "units",
            "text_table",
            "sanitise",
            "output",
            "logging",
            "private_files",
            "secrets",
        ],
    ),
    ("configuration", &["config"]),
    (
        "sources and their domains",
        &[
            "image", "host", "gpu", "health", "docker", "registry", "pull", "claims",
        ],
    ),
    ("compatibility verdicts", &["compat"]),
    (
        "diagnosis, shells, runs and services",
        &["launch_check", "doctor", "shell", "runs", "services"],
    ),
    ("the metrics endpoint", &["metrics"]),
    ("the command line", &["cli", "cli_docs", "read_only"]),
    ("the TUI's state and loop", &["app"]),
    ("the TUI's renderers", &["ui"]),
    ("the crate root and the binary", &["lib", "main"]),
];

/// Imports from a lower layer up to a higher one that stay, each with why (at most three).
const ALLOWED_UPWARD: &[(&str, &str, &str)] = &[(
    "app/mod.rs",
    "ui/mod.rs",
    "the event loop draws: it hands its state to ui::render, which reads that state and no more",
)];

/// Upward imports found today, which the restructuring of issue 17 removes. Temporary: the
/// list only shrinks, and an entry that no longer happens fails the test until it is removed
/// here.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// Pairs of files that import each other today. Other work on issue 17 breaks these cycles;
/// the list only shrinks (a pair that no longer imports both ways fails the test until it is
/// removed here), and an empty list is the goal.
#[rustfmt::skip]
const KNOWN_CYCLES: &[(&str, &str)] = &[
    // Siblings, being broken in the restructuring of issue 17.
];

/// Cycles among the top-level modules of one layer today (`docker` -> `pull` -> `registry` ->
/// `docker`), each as its modules in name order; the preflight helper moves the image reference
/// below them. Across layers a cycle always has an upward import, which the layer test finds.
const KNOWN_LAYER_CYCLES: &[&[&str]] = &[];

/// The layers inside `runs/`, lowest first, by the module under `runs/` a file belongs to
/// (`launch` for `runs/launch/container/ranks.rs`, `record` for `runs/record.rs`). A file may
/// import from its own module, the other modules of its layer (with no circle among them) and
/// the layers below; `runs/mod.rs`, which re-exports for the rest of the program, is above them
/// all, and no other file in `runs/` imports through it.
const RUNS_LAYERS: &[(&str, &[&str])] = &[
    (
        "the store and the record, which import no backend",
        &[
            "clock", "error", "spec", "record", "store", "run_lock", "series",
        ],
    ),
    ("training progress parsed from log lines", &["progress"]),
    (
        "what a run recorded (GPU samples, Xids, summaries), and reading it back",
        &["recorded"],
    ),
    ("how a local run's ranks are launched", &["launch"]),
    ("the backends", &["local", "slurm"]),
    ("the one dispatch over the backends", &["backend"]),
    ("following runs", &["watch"]),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file belongs to: `docker` for `docker/time.rs`, `units` for `units.rs`.
fn top_level(name: &str) -> &str {
    let first = name.split('/').next().unwrap_or(name);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// The module under `runs/` a file belongs to: `launch` for `runs/launch/plan.rs`; `None` for
/// `runs/mod.rs` and files outside `runs/`.
fn runs_module(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("runs/")?;
    (rest != "mod.rs").then(|| top_level(rest))
}

fn runs_layer_of(name: &str) -> Option<usize> {
    let module = runs_module(name)?;
    RUNS_LAYERS
        .iter()
        .position(|(_, members)| members.contains(&module))
}

fn layer_of(name: &str) -> Option<usize> {
    let top = top_level(name);
    LAYERS
        .iter()
        .position(|(_, members)| members.contains(&top))
}

/// Pairs of files that import each other, each once, in name order.
fn mutual_imports(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (from, targets) in graph {
        for to in targets {
            let back = graph.get(to).is_some_and(|t| t.contains(from));
            if back && from < to {
                pairs.push((from.clone(), to.clone()));
            }
        }
    }
    pairs
}

/// Imports from a lower layer to a higher one, as `(from, to)`.
fn upward_imports_in(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, String)> {
    let mut up = Vec::new();
    for (from, targets) in graph {
        for to in targets {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if a < b {
                    up.push((from.clone(), to.clone()));
                }
            }
        }
    }
    up
}

/// The top-level modules of each layer that can reach one another through imports inside that
/// layer, as sorted groups of two or more.
fn cycles_within_layers(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    cycles_within(graph, |n| Some(top_level(n)), layer_of)
}

/// The modules (`module` of a file) of each layer (`layer` of a file) that can reach one another
/// through imports inside that layer, as sorted groups of two or more.
fn cycles_within<'a>(
    graph: &'a BTreeMap<String, BTreeSet<String>>,
    module: impl Fn(&'a str) -> Option<&'a str>,
    layer: impl Fn(&str) -> Option<usize>,
) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            let (Some(a), Some(b)) = (module(from), module(to)) else {
                continue;
            };
            if a != b && layer(from).is_some() && layer(from) == layer(to) {
                edges.entry(a).or_default().insert(b);
            }
        }
    }
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(m) = stack.pop() {
            for &next in edges.get(m).into_iter().flatten() {
                if seen.insert(next) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for &m in edges.keys() {
        let from_m = reach(m);
        let group: Vec<String> = from_m
            .iter()
            .filter(|&&other| reach(other).contains(m))
            .map(|s| s.to_string())
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

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

#[test]
fn every_top_level_module_has_a_layer() {
    let files = source_files(&src_dir());
    assert!(
        files.len() > 100,
        "the walk found the modules: {}",
        files.len()
    );
    let unplaced: BTreeSet<&str> = files
        .iter()
        .map(|f| top_level(&f.name))
        .filter(|top| layer_of(top).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules missing from LAYERS in src/layers_tests.rs: {unplaced:?}"
    );
}

#[test]
fn no_two_files_import_each_other() {
    let graph = import_graph(&source_files(&src_dir()));
    let pairs = mutual_imports(&graph);
    let known: BTreeSet<(String, String)> = KNOWN_CYCLES
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<String> = pairs
        .iter()
        .filter(|p| !known.contains(p))
        .map(|(a, b)| format!("  {a} <-> {b}"))
        .collect();
    let gone: Vec<String> = known
        .iter()
        .filter(|p| !pairs.contains(p))
        .map(|(a, b)| format!("  {a} <-> {b}"))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "files that import each other (move what both need below them):\n{}\n\
         pairs in KNOWN_CYCLES that no longer import each other (remove them there):\n{}",
        new.join("\n"),
        gone.join("\n")
    );
}

#[test]
fn imports_run_down_the_layers() {
    assert!(ALLOWED_UPWARD.len() <= 3, "at most three upward imports");
    for (from, to, why) in ALLOWED_UPWARD {
        assert!(why.len() > 20, "{from} -> {to} says why it goes up");
    }
    let graph = import_graph(&source_files(&src_dir()));
    let up = upward_imports_in(&graph);
    let unexplained: Vec<String> = up
        .iter()
        .filter(|(from, to)| !ALLOWED_UPWARD.iter().any(|(f, t, _)| f == from && t == to))
        .filter(|(from, to)| !KNOWN_UPWARD.iter().any(|(f, t)| f == from && t == to))
        .map(|(from, to)| {
            let layer = |n: &str| layer_of(n).map_or("?", |l| LAYERS[l].0);
            format!("  {from} ({}) -> {to} ({})", layer(from), layer(to))
        })
        .collect();
    let stale: Vec<String> = ALLOWED_UPWARD
        .iter()
        .map(|(f, t, _)| (f, t))
        .chain(KNOWN_UPWARD.iter().map(|(f, t)| (f, t)))
        .filter(|(f, t)| !up.iter().any(|(from, to)| *f == from && *t == to))
        .map(|(f, t)| format!("  {f} -> {t}"))
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "imports from a lower layer up to a higher one (see LAYERS):\n{}\n\
         entries in ALLOWED_UPWARD or KNOWN_UPWARD that no longer happen (remove them there):\n{}",
        unexplained.join("\n"),
        stale.join("\n")
    );
}

#[test]
fn the_import_reader_finds_paths_and_skips_comments_strings_and_tests() {
    let code = r##"
        //! Uses crate::ui::nothing in a doc comment.
        use crate::{docker::{self, Engine}, units::plural as p};
        use super::sibling::Thing;
        use child::Item;
        /* crate::app::in_a_block_comment */
        fn f() -> String { let _ = '"'; crate::output::wrap("crate::app::in_a_string", "") }
        fn g<'a>(x: &'a str) -> &'a str { x }
        const R: &str = r#"crate::app::in_a_raw_string"#;
        #[cfg(test)]
        mod tests { use crate::app::only_in_tests; }
        #[cfg(test)]
        use crate::ui::only_in_tests;
        fn h() { self::child::run(); }
        pub(in crate::app) fn only_visible_there() {}
    "##;
    let file = SourceFile {
        name: "runs/here.rs".into(),
        module: vec!["runs".into(), "here".into()],
        children: vec!["child".into()],
        code: without_test_items(&strip_comments_and_strings(code)),
    };
    let found: Vec<String> = paths(&tokens(&file.code), &file.children)
        .iter()
        .map(|p| absolute(&file, p).join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "docker",
            "docker::Engine",
            "units::plural",
            "runs::sibling::Thing",
            "runs::here::child::Item",
            "output::wrap",
            "runs::here::child::run",
        ]
    );
}

#[test]
fn the_modules_of_a_layer_form_no_cycle() {
    let graph = import_graph(&source_files(&src_dir()));
    let found = cycles_within_layers(&graph);
    let known: Vec<Vec<String>> = KNOWN_LAYER_CYCLES
        .iter()
        .map(|g| g.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(
        found, known,
        "top-level modules of one layer that import one another in a circle (left), against \
         KNOWN_LAYER_CYCLES (right)"
    );
}

/// Imports between the modules of `runs/` that break its layers: up a layer, into a module
/// that has no layer, or through `runs/mod.rs` from inside `runs/`; each as `from -> to (why)`.
fn runs_layer_breaks(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let layer = |n: &str| runs_layer_of(n).map_or("no layer", |l| RUNS_LAYERS[l].0);
    let mut found = Vec::new();
    for (from, targets) in graph {
        let Some(from_module) = runs_module(from) else {
            continue;
        };
        for to in targets {
            if to == "runs/mod.rs" {
                found.push(format!(
                    "  {from} -> {to} (name the module under runs/, not the re-export)"
                ));
                continue;
            }
            let Some(to_module) = runs_module(to) else {
                continue;
            };
            if from_module == to_module {
                continue;
            }
            let up = match (runs_layer_of(from), runs_layer_of(to)) {
                (Some(a), Some(b)) => a < b,
                _ => true,
            };
            if up {
                found.push(format!(
                    "  {from} ({}) -> {to} ({})",
                    layer(from),
                    layer(to)
                ));
            }
        }
    }
    for group in cycles_within(graph, runs_module, runs_layer_of) {
        found.push(format!("  a circle among {}", group.join(", ")));
    }
    found
}

#[test]
fn the_modules_of_runs_form_layers() {
    let files = source_files(&src_dir());
    let unplaced: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| runs_module(&f.name))
        .filter(|&m| !RUNS_LAYERS.iter().any(|(_, members)| members.contains(&m)))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of runs/ missing from RUNS_LAYERS in src/layers_tests.rs: {unplaced:?}"
    );
    let breaks = runs_layer_breaks(&import_graph(&files));
    assert!(
        breaks.is_empty(),
        "imports inside runs/ that do not run down its layers (see RUNS_LAYERS; move what both \
         need to the lower one):\n{}",
        breaks.join("\n")
    );
}

#[test]
fn a_break_of_the_runs_layers_is_found() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry(from.to_string())
                .or_default()
                .insert(to.to_string());
        }
        g
    };
    let down = graph(&[
        ("runs/slurm/run.rs", "runs/record.rs"),
        ("runs/local/stop.rs", "runs/slurm/mod.rs"),
        ("runs/record.rs", "host/mod.rs"),
    ]);
    assert!(runs_layer_breaks(&down).is_empty());
    assert_eq!(
        runs_layer_breaks(&graph(&[("runs/record.rs", "runs/slurm/job.rs")])),
        [
            "  runs/record.rs (the store and the record, which import no backend) -> \
          runs/slurm/job.rs (the backends)"
        ]
    );
    assert_eq!(
        runs_layer_breaks(&graph(&[
            ("runs/local/stop.rs", "runs/slurm/mod.rs"),
            ("runs/slurm/run.rs", "runs/local/stop.rs"),
        ])),
        ["  a circle among local, slurm"]
    );
    assert_eq!(
        runs_layer_breaks(&graph(&[("runs/watch/logs.rs", "runs/mod.rs")])),
        ["  runs/watch/logs.rs -> runs/mod.rs (name the module under runs/, not the re-export)"]
    );
}

#[test]
fn a_module_is_found_whatever_its_visibility() {
    let text = "mod a;\npub mod b;\npub(crate) mod c;\npub(super) mod d;\n\
                pub(in crate::runs) mod e;\n#[cfg(test)]\nmod tests;\n";
    let names: Vec<String> = declared_modules(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
}
