//! The structure of the sources, checked (issue #34): the import graph of
//! the broker and the operator (no circle between modules, nothing below
//! the API imports it, storage imports no coordinator) and the size of
//! source files. Reads the sources, builds nothing:
//! `cargo test -p kaas-broker --test source_structure`.
//!
//! A module here is a file or folder under `src/`; in the folders listed
//! in [`BROKER_FOLDERS`] each child is a module of its own (`group::core`,
//! `storage::log`), elsewhere a folder is one module (`api`). Every
//! `crate::…`, `super::…` and `self::…` path of non-test code is an edge,
//! in `use` lines and in code alike; comments and test modules are not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Broker folders whose children are modules of their own.
const BROKER_FOLDERS: &[&str] = &[
    "auth",
    "client_quotas",
    "cluster",
    "coordinator",
    "group",
    "net",
    "settings",
    "storage",
    "txn",
];

/// The only modules that may import `api`: the connection that calls it,
/// the composition root that wires its marker writer, and the fuzzing
/// entry points.
const ABOVE_API: &[&str] = &["api", "fuzzing", "net::connection", "net::server", "serve"];

/// What lower layers must not import: storage no coordinator (nor the
/// ports' adapters on it), the group coordinator no storage (it owns its
/// port; `log_stores` implements it), the coordinator runtime none of the
/// coordinators built on it, and the records' values (plain data and
/// their replay, shared by the coordinators and the logs) neither.
const DOWNWARDS_ONLY: &[(&str, &[&str])] = &[
    ("storage", &["group", "txn", "coordinator", "log_stores"]),
    ("group", &["storage", "log_stores"]),
    ("coordinator", &["group", "txn", "api"]),
    (
        "records",
        &["group", "txn", "coordinator", "storage", "api"],
    ),
];

/// The longest a source file (tests aside) may be without saying why at
/// its top, in a line starting `//! Over 800 lines:`.
const LONGEST_FILE: usize = 800;

/// The crates whose sources are held to [`LONGEST_FILE`].
const CRATES: &[&str] = &[
    ".",
    "../operator",
    "../shared",
    "../client",
    "../bench",
    "../soak",
    "../testkit",
    "../e2e/k8s",
];

#[test]
fn no_source_file_is_over_800_lines_without_a_reason() {
    let mut long = Vec::new();
    for krate in CRATES {
        let src = src(krate);
        for file in rust_files(&src).iter().filter(|f| !is_test_file(&src, f)) {
            let text = std::fs::read_to_string(file).expect("a source file reads");
            let lines = text.lines().count();
            let reason = text
                .lines()
                .take_while(|l| l.starts_with("//!") || l.is_empty())
                .any(|l| l.starts_with("//! Over 800 lines:"));
            if lines > LONGEST_FILE && !reason {
                long.push(format!("{} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {LONGEST_FILE} lines, with no reason at the top:\n{}",
        long.join("\n")
    );
}

#[test]
fn broker_modules_import_in_no_circle() {
    let graph = Graph::of(&src("."), BROKER_FOLDERS);
    let circles = graph.circles();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn operator_modules_import_in_no_circle() {
    let graph = Graph::of(&src("../operator"), &[]);
    let circles = graph.circles();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn nothing_below_the_api_imports_it() {
    let graph = Graph::of(&src("."), BROKER_FOLDERS);
    let wrong: Vec<String> = graph
        .edges_into(|to| to == "api")
        .into_iter()
        .filter(|(from, _, _)| !ABOVE_API.contains(&from.as_str()))
        .map(|(from, to, file)| format!("{from} -> {to} ({file})"))
        .collect();
    assert!(
        wrong.is_empty(),
        "below the API, importing it:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn lower_layers_import_no_higher_one() {
    let graph = Graph::of(&src("."), BROKER_FOLDERS);
    let mut wrong = Vec::new();
    for (lower, higher) in DOWNWARDS_ONLY {
        for (from, to, file) in graph.edges_into(|to| higher.contains(&top(to))) {
            if top(from) == *lower {
                wrong.push(format!("{from} -> {to} ({file})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "importing a higher layer:\n{}",
        wrong.join("\n")
    );
}

/// The crates whose modules the architecture doc may name, by the name it
/// uses for their paths' first segment when it names the crate.
const DOC_CRATES: &[(&str, &str)] = &[
    ("kaas_broker", "."),
    ("kaas_operator", "../operator"),
    ("kaas_shared", "../shared"),
    ("kaas_client", "../client"),
    ("kaas_testkit", "../testkit"),
];

/// Every module path (`group::core::classic_bridge`, `serve::open`) and
/// source file (`group/manager.rs`, `core/tests/`) that
/// docs/design/architecture.md names in backticks exists. A path may be
/// given from any module down (`core::consumer` for
/// `group::core::consumer`); its last segment may be an item of the module
/// before it; a capitalised segment (a type) ends what is checked.
#[test]
fn every_module_the_architecture_doc_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/design/architecture.md"))
        .expect("the architecture doc reads");
    let mut modules: Vec<(Vec<String>, PathBuf)> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    for (name, dir) in DOC_CRATES {
        let src = src(dir);
        for file in rust_files(&src) {
            let mut path = module_path(&src, &file);
            files.push(
                file.strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string(),
            );
            path.insert(0, name.to_string());
            modules.push((path, file));
        }
    }
    for tests in ["broker/tests", "e2e/k8s/tests"] {
        for file in rust_files(&root.join(tests)) {
            files.push(
                file.strip_prefix(&root)
                    .unwrap_or(&file)
                    .display()
                    .to_string(),
            );
        }
    }
    let module_ends_with = |tail: &[String]| {
        modules
            .iter()
            .filter(|(path, _)| path.ends_with(tail))
            .map(|(_, file)| file.clone())
            .collect::<Vec<_>>()
    };
    let mut missing = Vec::new();
    for quoted in doc.split('`').skip(1).step_by(2) {
        if quoted.contains("::")
            && quoted
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            let segments: Vec<String> = quoted
                .split("::")
                .take_while(|s| s.starts_with(|c: char| c.is_lowercase() || c == '_'))
                .map(String::from)
                .collect();
            let known_first = segments.first().is_some_and(|first| {
                DOC_CRATES.iter().any(|(name, _)| name == first)
                    || modules.iter().any(|(path, _)| path.contains(first))
            });
            if segments.len() < 2 || !known_first {
                continue; // a type's method, or another crate's path (tokio::spawn)
            }
            let (last, module) = segments.split_last().expect("two segments");
            let found = !module_ends_with(&segments).is_empty()
                || module_ends_with(module).iter().any(|file| {
                    std::fs::read_to_string(file).is_ok_and(|text| defines(&text, last))
                });
            if !found {
                missing.push(quoted.to_string());
            }
        } else if (quoted.ends_with(".rs")
            || quoted.ends_with('/') && quoted.trim_end_matches('/').contains('/'))
            && quoted
                .chars()
                .all(|c| c.is_alphanumeric() || "_/.".contains(c))
            && quoted.contains(|c: char| c.is_alphanumeric())
            && !quoted.starts_with("x/")
            && !quoted.starts_with("x.")
        {
            let dir = quoted.strip_suffix('/');
            let found = files.iter().any(|f| match dir {
                Some(dir) => f.contains(&format!("{dir}/")),
                None => f == quoted || f.ends_with(&format!("/{quoted}")),
            }) || root.join(quoted).exists();
            if !found {
                missing.push(quoted.to_string());
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "docs/design/architecture.md names what the code does not have:\n{}",
        missing.join("\n")
    );
}

/// Whether `text` defines an item named `name` (outside its tests).
fn defines(text: &str, name: &str) -> bool {
    const ITEMS: [&str; 8] = [
        "fn", "struct", "enum", "const", "static", "mod", "type", "trait",
    ];
    tokens(without_tests(text))
        .windows(2)
        .any(|w| ITEMS.contains(&w[0].as_str()) && w[1] == name)
}

/// The checks see what they must: a circle made up is found.
#[test]
fn a_circle_is_found() {
    let mut graph = Graph::default();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph.add(from.into(), to.into(), "x.rs".into());
    }
    assert_eq!(
        graph.circles(),
        vec!["a -> b (x.rs), b -> c (x.rs), c -> a (x.rs)"]
    );
}

#[test]
fn paths_are_read_from_use_trees_and_code() {
    let src = "use crate::group::{core::X, errors::{code, Y}};\n\
               // crate::commented::out\n\
               fn f() { super::super::super::txn::core::f(); let x = crate::storage::Log::new(); }\n\
               #[cfg(test)]\nmod tests {\n use crate::api::Z;\n}\n";
    let module = ["group", "consumer", "heartbeat"].map(String::from);
    let paths = paths_in(src, &module);
    assert_eq!(
        paths,
        vec![
            vec!["group", "core", "X"],
            vec!["group", "errors", "code"],
            vec!["group", "errors", "Y"],
            vec!["txn", "core", "f"],
            vec!["storage", "Log", "new"],
        ]
    );
}

fn src(crate_dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(crate_dir)
        .join("src")
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

#[derive(Default)]
struct Graph {
    /// from → to → a file of `from` that imports `to`.
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn of(src: &Path, folders: &[&str]) -> Graph {
        let files = rust_files(src);
        let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
        let unit = |path: &[String]| -> Option<String> {
            let first = path.first()?;
            if !modules.iter().any(|m| m.first() == Some(first)) {
                return None; // another crate, or an item of the crate root
            }
            match path.get(1) {
                Some(second)
                    if folders.contains(&first.as_str())
                        && modules.contains(&vec![first.clone(), second.clone()]) =>
                {
                    Some(format!("{first}::{second}"))
                }
                _ => Some(first.clone()),
            }
        };
        let mut graph = Graph::default();
        for file in files.iter().filter(|f| !is_test_file(src, f)) {
            let module = module_path(src, file);
            let Some(from) = unit(&module) else { continue };
            let text = std::fs::read_to_string(file).expect("a source file reads");
            let name = file.strip_prefix(src).unwrap_or(file).display().to_string();
            for path in paths_in(&text, &module) {
                if let Some(to) = unit(&path) {
                    if to != from {
                        graph.add(from.clone(), to, name.clone());
                    }
                }
            }
        }
        graph
    }

    fn add(&mut self, from: String, to: String, file: String) {
        self.edges
            .entry(from)
            .or_default()
            .entry(to)
            .or_insert(file);
    }

    /// Every edge into a module `to` accepts: (from, to, file).
    fn edges_into(&self, to: impl Fn(&str) -> bool) -> Vec<(&String, &String, &String)> {
        let mut out = Vec::new();
        for (from, tos) in &self.edges {
            for (t, file) in tos.iter().filter(|(t, _)| to(t)) {
                out.push((from, t, file));
            }
        }
        out
    }

    /// One shortest circle through each module that is on one, as
    /// `a -> b (file), b -> a (file)`, each circle once.
    fn circles(&self) -> Vec<String> {
        let mut found = BTreeSet::new();
        for start in self.edges.keys() {
            if let Some(circle) = self.shortest_path(start, start) {
                // The same circle from each of its modules: rotate to the least.
                let least = (0..circle.len())
                    .min_by_key(|&i| &circle[i])
                    .expect("a circle has modules");
                let mut rotated = circle[least..].to_vec();
                rotated.extend_from_slice(&circle[..least]);
                found.insert(rotated);
            }
        }
        found
            .into_iter()
            .map(|circle| {
                (0..circle.len())
                    .map(|i| {
                        let (a, b) = (&circle[i], &circle[(i + 1) % circle.len()]);
                        format!("{a} -> {b} ({})", self.edges[a][b])
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect()
    }

    /// The modules of a shortest path from `from` back to `to`, `from` first.
    fn shortest_path(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut frontier = vec![from];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for m in frontier {
                for n in self.edges.get(m).into_iter().flat_map(|t| t.keys()) {
                    if n == to {
                        let mut path = vec![m.to_string()];
                        let mut at = m;
                        while at != from {
                            at = came_from[at];
                            path.push(at.to_string());
                        }
                        path.reverse();
                        return Some(path);
                    }
                    if n != from && !came_from.contains_key(n.as_str()) {
                        came_from.insert(n, m);
                        next.push(n.as_str());
                    }
                }
            }
            frontier = next;
        }
        None
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("a source folder reads")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `group/core/mod.rs` → `[group, core]`; `lib.rs` and `main.rs` → `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    if parts.first().is_some_and(|p| p == "bin") {
        parts.clear(); // binaries are crates of their own, above the library
    }
    parts
}

/// Unit tests, in `x/tests.rs` or `x/tests/` (the house's layout).
fn is_test_file(src: &Path, file: &Path) -> bool {
    module_path(src, file).iter().any(|p| p == "tests")
}

/// Every `crate::`, `super::` and `self::` path in `text` (a file of
/// `module`), resolved from the crate root, use trees expanded.
fn paths_in(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let tokens = tokens(without_tests(text));
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let base = match tokens[i].as_str() {
            "crate" => Some(Vec::new()),
            "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
            "self" => Some(module.to_vec()),
            _ => None,
        };
        let after_path_sep = i > 0 && tokens[i - 1] == "::";
        match base {
            Some(mut base) if !after_path_sep && tokens.get(i + 1).is_some_and(|t| t == "::") => {
                i += 2;
                // Chained `super::super::`.
                while tokens.get(i).is_some_and(|t| t == "super") {
                    base.pop();
                    i += 2;
                }
                i = use_tree(&tokens, i, base, &mut out);
            }
            _ => i += 1,
        }
    }
    out
}

/// Reads a path or a `{…}` tree at `tokens[i]` under `prefix`; returns the
/// index after it.
fn use_tree(
    tokens: &[String],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix;
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        Some("}") => return i + 1,
                        Some(",") => i += 1,
                        Some("self") => {
                            out.push(path.clone());
                            i += 1;
                        }
                        Some(_) => i = use_tree(tokens, i, path.clone(), out),
                        None => return i,
                    }
                }
            }
            Some(t) if is_ident(t) => {
                path.push(t.to_string());
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                    continue;
                }
                out.push(path);
                return i;
            }
            _ => {
                if !path.is_empty() {
                    out.push(path);
                }
                return i;
            }
        }
    }
}

fn is_ident(t: &str) -> bool {
    t.chars().all(|c| c.is_alphanumeric() || c == '_') && !t.is_empty()
}

/// Identifiers, `::` and single punctuation; comments, strings and
/// character literals dropped.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = at(i) {
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == '/' && at(i + 1) == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == Some('*') {
            i += 2;
            while at(i).is_some() && !(at(i) == Some('*') && at(i + 1) == Some('/')) {
                i += 1;
            }
            i += 2;
        } else if c == ':' && at(i + 1) == Some(':') {
            out.push("::".into());
            i += 2;
        } else if c == '"' {
            i += 1;
            while at(i).is_some_and(|c| c != '"') {
                i += if at(i) == Some('\\') { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && at(i + 2) == Some('\'') {
            i += 3; // 'x'
        } else if c == '\'' && at(i + 1) == Some('\\') {
            i += 2; // '\n', '\u{…}'
            while at(i).is_some_and(|c| c != '\'') {
                i += 1;
            }
            i += 1;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The code of a file without its `#[cfg(test)] mod tests { … }` (by
/// convention last).
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    }
}
