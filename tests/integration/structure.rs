//! The workspace's structure, checked: no module cycle within a crate (dependencies between
//! the top-level modules of each crate point one way; cargo already refuses cycles between
//! crates), and a host that embeds only the SQL functions compiles none of the cluster, cloud
//! or command-line stacks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose modules must form no cycle: every library of the workspace and the CLI.
const CRATE_SOURCES: [&str; 6] = [
    "crates/datafusion-anonymity/src",
    "crates/engine/src",
    "crates/ballista/src",
    "crates/generate/src",
    "src",
    "python/src",
];

/// Each top-level module of the crate under `src` and the other top-level modules its code
/// names through `crate::`. Comments are not imports (a doc link to a higher module is a
/// reference, not a dependency), and neither is test code: test files (`tests.rs`,
/// `*_tests.rs`) and a file's trailing `#[cfg(test)] mod`, which may drive a module through
/// the ones above it.
fn module_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut stack = vec![path.clone()];
            while let Some(dir) = stack.pop() {
                for inner in std::fs::read_dir(&dir).unwrap() {
                    let inner = inner.unwrap().path();
                    if inner.is_dir() {
                        stack.push(inner);
                    } else if inner.extension().is_some_and(|e| e == "rs") && !is_test_file(&inner)
                    {
                        files.push((name.clone(), inner));
                    }
                }
            }
        } else if let Some(module) = name.strip_suffix(".rs")
            && module != "lib"
            && module != "main"
        {
            files.push((module.to_string(), path));
        }
    }
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut imports: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (module, file) in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in crate_paths(&text) {
            if &target != module && modules.contains(&target) {
                imports.get_mut(module).unwrap().insert(target);
            }
        }
    }
    imports
}

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The first segment of every `crate::` path in `text`'s code, groups (`crate::{a, b::c}`)
/// included.
fn crate_paths(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let tests_from = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    let code: String = lines[..tests_from]
        .iter()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => *line,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item);
                if !name.is_empty() {
                    found.push(name);
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found
}

/// A cycle of `graph`, as the modules along it (first repeated at the end), if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // depth-first search; 1 = on the current path, 2 = finished
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = path.iter().position(|m| m == next).unwrap();
                    let mut cycle = path[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, path) {
                        return Some(cycle);
                    }
                }
            }
        }
        path.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            let mut path = Vec::new();
            if let Some(cycle) = visit(node, graph, &mut state, &mut path) {
                return Some(cycle);
            }
        }
    }
    None
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut cycles = Vec::new();
    for src in CRATE_SOURCES {
        let graph = module_imports(&workspace_root().join(src));
        assert!(!graph.is_empty(), "{src}: no modules found");
        if let Some(cycle) = find_cycle(&graph) {
            cycles.push(format!("{src}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        cycles.is_empty(),
        "module cycles (a lower module imports a higher one; move the shared item down):\n{}",
        cycles.join("\n")
    );
}

/// The check can fail: a crate of three modules in layers, then the same with one
/// deliberate back-import from the lowest to the highest.
#[test]
fn a_back_import_is_reported_as_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod storage; pub mod tables; pub mod publish;",
    )
    .unwrap();
    std::fs::write(
        src.join("storage.rs"),
        "// see crate::publish for the writer\n",
    )
    .unwrap();
    std::fs::write(src.join("tables.rs"), "use crate::storage::Location;\n").unwrap();
    std::fs::create_dir(src.join("publish")).unwrap();
    std::fs::write(
        src.join("publish/mod.rs"),
        "use crate::{tables::read, storage};\n",
    )
    .unwrap();
    let layered = module_imports(src);
    assert_eq!(
        layered["publish"],
        BTreeSet::from(["storage".to_string(), "tables".to_string()])
    );
    assert!(layered["storage"].is_empty(), "a comment is not an import");
    assert_eq!(find_cycle(&layered), None);

    std::fs::write(
        src.join("storage.rs"),
        "pub fn f() { crate::publish::is_parquet_file(); }\n",
    )
    .unwrap();
    let cycle = find_cycle(&module_imports(src)).expect("the back-import closes a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(
        cycle.contains(&"storage".to_string()) && cycle.contains(&"publish".to_string()),
        "{cycle:?}"
    );
}

/// The crates a package compiles (normal and build dependencies, the package itself
/// included), by name.
fn compiled_packages(package: &str) -> BTreeSet<String> {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// A host that adds the crate only for its SQL functions (`examples/functions-only`) compiles
/// nothing of Ballista, gRPC, the cloud SDKs or the command line.
#[test]
fn a_functions_only_host_compiles_no_cluster_cloud_or_cli_crate() {
    let packages = compiled_packages("functions-only-host");
    let forbidden = |name: &str| {
        name.starts_with("ballista")
            || name.starts_with("tonic")
            || name.starts_with("arrow-flight")
            || name.starts_with("reqwest")
            || name.starts_with("aws")
            || name.starts_with("clap")
            || name.starts_with("indicatif")
            || name.starts_with("mimalloc")
            || name.starts_with("datafusion-ffi")
            || name.starts_with("datafusion-anonymity-")
    };
    let found: Vec<&String> = packages.iter().filter(|p| forbidden(p)).collect();
    assert!(
        found.is_empty(),
        "the functions-only host compiles {found:?}"
    );
    assert!(packages.contains("datafusion-anonymity"));
    // the same query through the command line's dependencies does compile them: the check sees
    // what it looks for
    let cli = compiled_packages("datafusion-anonymity-cli");
    assert!(cli.iter().any(|p| forbidden(p)), "{cli:?}");
}
