//! The documentation stays in step with the program and with itself: every key the keymap binds
//! is on the keys page, every relative link in the README and in `docs/` leads to a file (and a
//! heading) that exists, the README links to every page of `docs/`, and it stays a front door.

use std::path::{Path, PathBuf};

use gpudeck::app::keymap::bindings;

/// The README's length limit: what it is, a screen, the two commands, the tabs, links.
const README_MAX_LINES: usize = 250;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every page under `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ can be read")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut all = vec![root().join("README.md")];
    all.extend(pages);
    all
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of a Markdown text outside fenced code blocks, with inline code spans blanked.
fn prose_lines(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let prose: String = line
            .split('`')
            .enumerate()
            .map(|(i, part)| if i % 2 == 0 { part } else { "" })
            .collect::<Vec<_>>()
            .join("``");
        out.push(prose);
    }
    out
}

/// The targets of the `[text](target)` links of a Markdown text that point inside the
/// repository: web addresses are left out.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    links
}

/// A heading's anchor as GitHub makes it: lower case, spaces to hyphens, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings.
fn anchors(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            out.push(anchor(
                &line.trim_start_matches('#').trim().replace('`', ""),
            ));
        }
    }
    out
}

#[test]
fn every_key_is_in_the_keys_page() {
    let keys = read(&root().join("docs/keys.md"));
    for b in bindings() {
        assert!(
            keys.contains(&format!("`{}`", b.label)),
            "docs/keys.md does not document the key `{}` ({})",
            b.label,
            b.description
        );
    }
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        let dir = doc.parent().expect("a document is in a directory");
        for link in relative_links(&text) {
            checked += 1;
            let (file, fragment) = match link.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", doc.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                if !anchors(&read(&target)).iter().any(|a| a == fragment) {
                    broken.push(format!("{}: {link} (no such heading)", doc.display()));
                }
            }
        }
    }
    assert!(checked > 50, "the links were found ({checked})");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_links_to_every_docs_page() {
    let readme = read(&root().join("README.md"));
    let links = relative_links(&readme);
    for doc in documents().into_iter().skip(1) {
        let name = doc
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a page name");
        let link = format!("docs/{name}");
        assert!(
            links
                .iter()
                .any(|l| l.split('#').next() == Some(link.as_str())),
            "README.md does not link to {link}"
        );
    }
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move the reference to docs/"
    );
    for command in ["cargo run --release", "cargo test --workspace"] {
        assert!(readme.contains(command), "README.md lost `{command}`");
    }
}

#[test]
fn links_and_anchors_are_read_as_markdown_does() {
    let text = "See [a](docs/a.md#b-c) and [web](https://x.org).\n```\n[no](code.md)\n```\n`[no](span.md)` [c](#top)\n";
    assert_eq!(relative_links(text), ["docs/a.md#b-c", "#top"]);
    assert_eq!(anchor("1 GPUs"), "1-gpus");
    assert_eq!(
        anchor("Workspaces, networks and kills"),
        "workspaces-networks-and-kills"
    );
    assert_eq!(
        anchors("# `gpudeck gpus`\n```\n# not a heading\n```\n## When it goes away\n"),
        ["gpudeck-gpus", "when-it-goes-away"]
    );
}
