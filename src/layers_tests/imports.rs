//! The import graph of `src/` read as text: the module tree from `mod` declarations (leaving
//! out those under `#[cfg(test)]`), then every `crate::`, `super::`, `self::` and child-module
//! path in the code that is left once comments, string literals and `#[cfg(test)]` items are
//! taken out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One library or binary source file that is compiled outside tests.
pub(super) struct SourceFile {
    /// Relative to `src/`, with `/` separators: `docker/time.rs`.
    pub(super) name: String,
    /// The module path: `["docker", "time"]`; empty for `lib.rs` and `main.rs`.
    pub(super) module: Vec<String>,
    /// Modules this file declares with `mod name;`, by name.
    pub(super) children: Vec<String>,
    /// The code without comments, string contents and `#[cfg(test)]` items.
    pub(super) code: String,
}

/// The files of the module tree under `lib.rs` and `main.rs`, leaving out test-only modules.
pub(super) fn source_files(src: &Path) -> Vec<SourceFile> {
    let mut queue: Vec<(PathBuf, Vec<String>)> = vec![
        (src.join("lib.rs"), Vec::new()),
        (src.join("main.rs"), Vec::new()),
    ];
    let mut files = Vec::new();
    while let Some((path, module)) = queue.pop() {
        let text = std::fs::read_to_string(&path).expect("a source file can be read");
        let mut children = Vec::new();
        for (child, path_attr) in declared_modules(&text) {
            let child_path = child_file(&path, &child, path_attr.as_deref());
            let mut child_module = module.clone();
            child_module.push(child.clone());
            queue.push((child_path, child_module));
            children.push(child);
        }
        let name = path
            .strip_prefix(src)
            .expect("under src/")
            .to_string_lossy()
            .replace('\\', "/");
        files.push(SourceFile {
            name,
            module,
            children,
            code: without_test_items(&strip_comments_and_strings(&text)),
        });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
}

/// `mod name;` declarations outside `#[cfg(test)]`, with their `#[path = "..."]` if any.
pub(super) fn declared_modules(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut attrs: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("#[") {
            attrs.push(line);
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        let rest = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub(super) "))
            .or_else(|| {
                line.strip_prefix("pub(in ")
                    .and_then(|r| Some(r.split_once(") ")?.1))
            })
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(name) = rest.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            if !attrs.iter().any(|a| a.contains("cfg(test)")) {
                let path_attr = attrs.iter().find_map(|a| {
                    let value = a.strip_prefix("#[path")?.split('"').nth(1)?;
                    Some(value.to_string())
                });
                found.push((name.trim().to_string(), path_attr));
            }
        }
        attrs.clear();
    }
    found
}

/// Where `mod child;` in `parent` lives: `#[path]` relative to the parent's folder, else
/// `child.rs` or `child/mod.rs` beside a `mod.rs`/`lib.rs`/`main.rs`, or under a folder named
/// after any other parent file.
pub(super) fn child_file(parent: &Path, child: &str, path_attr: Option<&str>) -> PathBuf {
    let dir = parent.parent().expect("a file has a folder");
    if let Some(p) = path_attr {
        return dir.join(p);
    }
    let stem = parent.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if ["mod", "lib", "main"].contains(&stem) {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    let flat = base.join(format!("{child}.rs"));
    if flat.exists() {
        flat
    } else {
        base.join(child).join("mod.rs")
    }
}

/// The text with comments blanked and string and character literals emptied (`""`, `' '`), so
/// that a path in a doc comment or a message is not taken for an import. Lines are kept.
pub(super) fn strip_comments_and_strings(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&c, i) {
            // r"..", r#".."#, br#".."#: no escapes, ends at a quote and as many hashes.
            i = c[i..]
                .iter()
                .position(|&ch| ch == '"')
                .map_or(c.len(), |p| i + p + 1);
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                if c[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if c.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{1F600}'); a lifetime ('a) has no closing quote.
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The number of `#` of a raw string literal starting at `i`, if one does.
pub(super) fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let before_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
    if before_ident {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&ch| ch == '#').count();
    (c.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// The code with every item under `#[cfg(test)]` removed (a `mod tests { .. }`, a test-only
/// `use` or function), up to its closing brace or semicolon.
pub(super) fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at + "#[cfg(test)]".len()..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Identifiers, `::` and single punctuation characters.
pub(super) fn tokens(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(c[i].to_string());
            }
            i += 1;
        }
    }
    out
}

/// Every path that starts with `crate`, `super`, `self`, `gpudeck` or one of `children`, as its
/// segments; `use` groups (`crate::{a::b, c}`) give one path each.
pub(super) fn paths(tokens: &[String], children: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for i in 0..tokens.len() {
        let head = tokens[i].as_str();
        let is_head = ["crate", "super", "self", "gpudeck"].contains(&head)
            || children.iter().any(|c| c == head);
        let after_separator = i > 0 && (tokens[i - 1] == "::" || tokens[i - 1] == "$");
        // `pub(in crate::runs)` names where an item is visible, not what the file uses.
        let visibility = i > 1 && tokens[i - 1] == "in" && tokens[i - 2] == "(";
        if is_head
            && !after_separator
            && !visibility
            && tokens.get(i + 1).is_some_and(|t| t == "::")
        {
            path_tree(tokens, i, Vec::new(), &mut found);
        }
    }
    found
}

/// Reads one path, or a `use` tree of them, from `tokens[i]`; returns where it stopped.
pub(super) fn path_tree(
    tokens: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        let Some(token) = tokens.get(i) else {
            out.push(prefix);
            return i;
        };
        if token == "{" {
            i += 1;
            while tokens.get(i).is_some_and(|t| t != "}") {
                i = path_tree(tokens, i, prefix.clone(), out);
                // Skip an `as name` or anything else up to the next member.
                while tokens.get(i).is_some_and(|t| t != "," && t != "}") {
                    i += 1;
                }
                if tokens.get(i).is_some_and(|t| t == ",") {
                    i += 1;
                }
            }
            return i + 1;
        }
        // `{self, ..}` in a group names the module the group is in.
        let group_self = token == "self" && !prefix.is_empty();
        if group_self || !token.starts_with(|ch: char| ch.is_alphanumeric() || ch == '_') {
            out.push(prefix);
            return i + usize::from(group_self);
        }
        prefix.push(token.clone());
        i += 1;
        if tokens.get(i).is_some_and(|t| t == "::") {
            i += 1;
        } else {
            out.push(prefix);
            return i;
        }
    }
}

/// The absolute module path a path found in `file` names (before finding which file owns it).
pub(super) fn absolute(file: &SourceFile, path: &[String]) -> Vec<String> {
    let mut segments = path.iter().peekable();
    let mut module: Vec<String> = match segments.peek().map(|s| s.as_str()) {
        Some("crate" | "gpudeck") => {
            segments.next();
            Vec::new()
        }
        Some("self") => {
            segments.next();
            file.module.clone()
        }
        Some("super") => file.module.clone(),
        _ => file.module.clone(),
    };
    while segments.peek().is_some_and(|s| *s == "super") {
        segments.next();
        module.pop();
    }
    module.extend(segments.cloned());
    module
}

/// Which file imports which: `from -> {to}` by file name, leaving out the crate root as a
/// target and a file naming itself.
pub(super) fn import_graph(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<&[String], &str> = files
        .iter()
        .filter(|f| !f.module.is_empty())
        .map(|f| (f.module.as_slice(), f.name.as_str()))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let targets = graph.entry(file.name.clone()).or_default();
        for path in paths(&tokens(&file.code), &file.children) {
            let module = absolute(file, &path);
            let owner = (1..=module.len())
                .rev()
                .find_map(|n| by_module.get(&module[..n]));
            if let Some(&owner) = owner {
                if owner != file.name {
                    targets.insert(owner.to_string());
                }
            }
        }
    }
    graph
}
