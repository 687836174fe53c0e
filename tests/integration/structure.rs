//! The workspace's structure, checked: no module cycle within a crate (dependencies between
//! the top-level modules of each crate point one way; cargo already refuses cycles between
//! crates), none between the files and subfolders of any folder either, and a host that embeds only the SQL functions compiles none of the cluster, cloud
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
    let code = code_of(text, false);
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

/// `text`'s code: without comments and without a trailing `#[cfg(test)] mod` (which may drive
/// a module through the ones above it); without re-exports (`pub use`) when `no_reexports`.
fn code_of(text: &str, no_reexports: bool) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let tests_from = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    lines[..tests_from]
        .iter()
        .filter(|line| !(no_reexports && line.trim_start().starts_with("pub use")))
        .map(|line| line.find("//").map_or(*line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
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

/// A source file of a crate: its module path (`["publish", "staged"]`; `lib.rs` and
/// `main.rs` are `[]`, `x/mod.rs` is `["x"]`) and its path.
type SourceFile = (Vec<String>, PathBuf);

/// Every source file under `src` but the test files ([`is_test_file`]).
fn source_files(src: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut stack = vec![(src.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, module)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                let mut inner = module.clone();
                inner.push(name);
                stack.push((path, inner));
            } else if let Some(stem) = name.strip_suffix(".rs")
                && !is_test_file(&path)
            {
                let mut own = module.clone();
                if !["mod", "lib", "main"].contains(&stem) {
                    own.push(stem.to_string());
                }
                files.push((own, path));
            }
        }
    }
    files
}

/// The module paths `text`'s code (comments, re-exports and a trailing test module left out)
/// names, made absolute for the file of module `own`: `crate::a::b`, `super::a` (the
/// parent's), `self::a`, groups included.
fn named_paths(text: &str, own: &[String]) -> Vec<Vec<String>> {
    // a re-export makes an item of a part the folder's: the folder naming its own part
    let code = code_of(text, true);
    let segments = |path: &str| -> Vec<String> {
        path.split("::")
            .map(|s| {
                s.trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .collect()
    };
    let mut found = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().next_back();
            let base: Vec<String> = match start {
                "crate::" => Vec::new(),
                "self::" => own.to_vec(),
                _ => own[..own.len().saturating_sub(1)].to_vec(),
            };
            rest = &rest[at + start.len()..];
            // `a::super::` is handled from its first segment; `super::super::` climbs
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut base = base;
            let mut tail = rest;
            while let Some(more) = tail.strip_prefix("super::") {
                base.pop();
                tail = more;
            }
            let tail_end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '{'))
                .unwrap_or(tail.len());
            let head = &tail[..tail_end];
            match head.find('{') {
                Some(open) => {
                    let prefix = segments(&head[..open]);
                    let group = &tail[open + 1..];
                    let end = group.find('}').unwrap_or(group.len());
                    for item in group[..end].split(',') {
                        let mut path = base.clone();
                        path.extend(prefix.iter().cloned());
                        path.extend(segments(item));
                        found.push(path);
                    }
                }
                None => {
                    let mut path = base.clone();
                    path.extend(segments(head));
                    found.push(path);
                }
            }
        }
    }
    found
}

/// Per folder of the crate under `src` (`[]` for `src` itself), the graph of its entries
/// (files and subfolders, by name) by what their files name in one another: a file naming a
/// path into another file adds an edge between the two entries of their deepest common
/// folder that hold them. A file naming its own folders (its ancestors' `mod.rs`) or a
/// folder's `mod.rs` naming its own parts adds nothing: that is a folder and its inside.
fn folder_graphs(src: &Path) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let files = source_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (own, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for named in named_paths(&text, own) {
            // the file the path leads into: its longest prefix that is a module file
            let Some(target) = (0..=named.len())
                .rev()
                .map(|n| named[..n].to_vec())
                .find(|prefix| modules.contains(prefix))
            else {
                continue;
            };
            if target.starts_with(own) || own.starts_with(&target) {
                continue;
            }
            let common = own.iter().zip(&target).take_while(|(a, b)| a == b).count();
            let graph = graphs.entry(own[..common].to_vec()).or_default();
            graph
                .entry(own[common].clone())
                .or_default()
                .insert(target[common].clone());
            graph.entry(target[common].clone()).or_default();
        }
    }
    graphs
}

/// No folder of any crate has a cycle among its files and subfolders: within a folder,
/// dependencies point one way too, file by file ([`folder_graphs`]).
#[test]
fn no_folder_has_a_cycle_among_its_files_and_subfolders() {
    let mut cycles = Vec::new();
    for src in CRATE_SOURCES {
        for (folder, graph) in folder_graphs(&workspace_root().join(src)) {
            if let Some(cycle) = find_cycle(&graph) {
                cycles.push(format!(
                    "{src}/{}: {}",
                    folder.join("/"),
                    cycle.join(" -> ")
                ));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "cycles between files (a file imports one that imports it back; move the shared item \
         into a file below both):\n{}",
        cycles.join("\n")
    );
}

/// The file check can fail: a folder of three files in layers, each naming the one below
/// through `super::` (and the folder's `mod.rs` naming its parts, which is no cycle); then
/// the lowest names the highest, and the cycle is reported in that folder; and a deeper file
/// naming a file of its parent's folder through `crate::` counts for the parent's folder.
#[test]
fn a_back_import_between_files_is_reported_as_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "pub mod publish;").unwrap();
    std::fs::create_dir_all(src.join("publish/shuffle")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write(
        "publish/mod.rs",
        "mod runs; mod staged; mod delta;\npub use staged::Staged;\nuse self::delta::commit;\n",
    );
    write("publish/runs.rs", "pub fn run_id() {}\n");
    write(
        "publish/staged.rs",
        "use super::runs::run_id;\npub struct Staged;\n",
    );
    write(
        "publish/delta.rs",
        "use super::{runs, staged::Staged};\npub fn commit() {}\n",
    );
    write(
        "publish/shuffle/mod.rs",
        "use crate::publish::delta::commit;\n",
    );
    let layered = folder_graphs(src);
    let publish = &layered[&vec!["publish".to_string()]];
    assert_eq!(
        publish["delta"],
        BTreeSet::from(["runs".to_string(), "staged".to_string()])
    );
    assert_eq!(publish["shuffle"], BTreeSet::from(["delta".to_string()]));
    assert_eq!(find_cycle(publish), None);

    write(
        "publish/runs.rs",
        "pub fn run_id() { super::super::publish::delta::commit(); }\n",
    );
    let cycle = find_cycle(&folder_graphs(src)[&vec!["publish".to_string()]])
        .expect("the back-import closes a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert!(
        cycle.contains(&"runs".to_string()) && cycle.contains(&"delta".to_string()),
        "{cycle:?}"
    );
}

/// The crates a package compiles (normal and build dependencies, the package itself
/// included), by name.
fn compiled_packages(package: &str) -> BTreeSet<String> {
    packages_of(package, "normal,build")
}

/// The crates `cargo tree -p package -e edges` lists, by name.
fn packages_of(package: &str, edges: &str) -> BTreeSet<String> {
    cargo_tree(&["-p", package, "-e", edges])
}

/// The package names `cargo tree ARGS` lists (offline, one name a line).
fn cargo_tree(args: &[&str]) -> BTreeSet<String> {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline"])
        .args(args)
        .args(["--prefix", "none", "--format", "{p}"])
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

/// Testing the SQL crate (`cargo test -p datafusion-anonymity`: its normal, build and dev
/// dependencies) compiles no Delta, Ballista, cloud or command-line crate, nor the engine:
/// its tests stand on DataFusion alone. Checked against the CLI package, which does.
#[test]
fn testing_the_sql_crate_compiles_no_engine_delta_cluster_cloud_or_cli_crate() {
    let forbidden = |name: &str| {
        name.starts_with("deltalake")
            || name.starts_with("ballista")
            || name.starts_with("aws")
            || name.starts_with("clap")
            || name.starts_with("indicatif")
            || name.starts_with("datafusion-anonymity-")
    };
    let packages = packages_of("datafusion-anonymity", "normal,build,dev");
    let found: Vec<&String> = packages.iter().filter(|p| forbidden(p)).collect();
    // the one exception: clap through the `sqllogictest` runner's own test harness
    // (libtest-mimic, not optional there), which the `.slt` files need; no path of ours
    let only_through_the_slt_runner = |package: &str, clap_crate: &str| {
        direct_dependents(package, "normal,build,dev", clap_crate)
            .iter()
            .all(|p| p.starts_with("clap") || p == "libtest-mimic")
    };
    let found: Vec<&String> = found
        .into_iter()
        .filter(|p| {
            !(p.starts_with("clap") && only_through_the_slt_runner("datafusion-anonymity", p))
        })
        .collect();
    assert!(found.is_empty(), "testing the SQL crate compiles {found:?}");
    let cli = packages_of("datafusion-anonymity-cli", "normal,build,dev");
    assert!(cli.iter().any(|p| forbidden(p)), "{cli:?}");
    // the exception is narrow: the CLI reaches clap by its own path too
    assert!(!only_through_the_slt_runner(
        "datafusion-anonymity-cli",
        "clap"
    ));
}

/// `dependency` and the packages that depend on it directly in the tree of `package`: `cargo
/// tree --invert --depth 1`, names only.
fn direct_dependents(package: &str, edges: &str, dependency: &str) -> BTreeSet<String> {
    cargo_tree(&[
        "-p", package, "-e", edges, "--invert", dependency, "--depth", "1",
    ])
}
