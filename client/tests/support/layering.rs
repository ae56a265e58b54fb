//! The client's layering check: `client/src` has one folder per layer, plus the files beside
//! `lib.rs` (the public API). A file may name, in a `crate::` path, only the files of lower
//! layers, and in its own folder only the files of lower groups; a folder's `mod.rs` only
//! declares its files. No server needed: this reads the sources.
//!
//! The check is textual: comments and literals are left out, then every `crate::` path (in
//! `use` lines and inline paths, `{...}` groups included) counts as a use of the file it
//! names: `crate::net::router::Router` uses `net/router.rs`, `crate::client::Client` uses
//! `client.rs`; in a folder, `super::<file>` uses that file. A path that names no file of
//! the layers (a re-export from the crate root, a new file nobody placed) fails the check.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

#[path = "../../../tests/support/cycles.rs"]
mod cycles;
#[path = "paths.rs"]
mod paths;

use paths::strip;

/// The layers, bottom first: a folder's name (`""` for the files beside `lib.rs`) and its
/// groups of files in order.
pub type Layers = &'static [(&'static str, &'static [&'static [&'static str]])];

/// A file of `src/`: its folder (`""` beside `lib.rs`) and its name without `.rs` (`mod`
/// for a folder's `mod.rs`).
pub type File = (String, String);

/// How a file is shown in messages: `net/router`, `client`.
pub fn show((folder, name): &File) -> String {
    if folder.is_empty() {
        name.clone()
    } else {
        format!("{folder}/{name}")
    }
}

/// A file's place: its layer's rank (bottom 0) and its group's rank within the layer.
fn place(layers: Layers, (folder, name): &File) -> Option<(usize, usize)> {
    let layer = layers.iter().position(|(f, _)| f == folder)?;
    let groups = layers[layer].1;
    let group = groups.iter().position(|g| g.contains(&name.as_str()))?;
    Some((layer, group))
}

/// Why the uses in each `(file, source)` break the layering; empty if none does.
pub fn violations(layers: Layers, files: &[(File, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (file, text) in files {
        let uses = used_files(layers, file, text);
        if file.1 == "mod" {
            found.extend(uses.iter().map(|u| {
                format!(
                    "`{}/mod.rs` uses `crate::{u}`: a mod.rs only declares its files",
                    file.0
                )
            }));
            continue;
        }
        let Some((layer, group)) = place(layers, file) else {
            found.push(format!("`{}` is in no layer", show(file)));
            continue;
        };
        for used in uses {
            let Some(target) = resolve(layers, &used) else {
                found.push(format!(
                    "`{}` uses `crate::{used}`, which names no file of the layers",
                    show(file)
                ));
                continue;
            };
            let (used_layer, used_group) = place(layers, &target).expect("resolved");
            let upward = if target.0 == file.0 {
                used_group >= group && target != *file
            } else {
                used_layer >= layer
            };
            if upward {
                found.push(format!(
                    "`{}` uses `{}`: not a lower layer (or a lower group of its folder)",
                    show(file),
                    show(&target)
                ));
            }
        }
    }
    found
}

/// The file a path of `used_files` names: `net::router` or `client`; `None` if none.
fn resolve(layers: Layers, path: &str) -> Option<File> {
    let mut parts = path.split("::");
    let first = parts.next()?;
    let is_folder = layers.iter().any(|(f, _)| !f.is_empty() && *f == first);
    let file = match (is_folder, parts.next()) {
        (true, Some(name)) => (first.to_owned(), name.to_owned()),
        (true, None) => return None,
        (false, _) => (String::new(), first.to_owned()),
    };
    place(layers, &file).map(|_| file)
}

/// `path` cut to what names a file: one name unless the first is a folder.
fn cut(layers: Layers, path: &str) -> String {
    let first = path.split("::").next().unwrap_or(path);
    let is_folder = layers.iter().any(|(f, _)| !f.is_empty() && *f == first);
    if is_folder { path } else { first }.to_owned()
}

/// The import circles among the files: each as the files along it, the first again last.
pub fn circles(layers: Layers, files: &[(File, String)]) -> Vec<String> {
    let mut graph: BTreeMap<File, BTreeSet<File>> = BTreeMap::new();
    for (file, text) in files {
        let used = used_files(layers, file, text);
        let targets = used
            .iter()
            .filter_map(|u| resolve(layers, u))
            .filter(|t| t != file);
        graph.entry(file.clone()).or_default().extend(targets);
    }
    let named = cycles::find(&graph).into_iter().map(|circle| {
        let names: Vec<String> = circle.iter().map(show).collect();
        names.join(" -> ")
    });
    named.collect::<BTreeSet<String>>().into_iter().collect()
}

/// The paths `file` names in `text`, comments and literals left out, each cut to what
/// names a file: `net::router` for `crate::net::router::Router`, `client` for
/// `crate::client::Client`; in a folder, `super::x` as `<folder>::x` when `x` is a file of it.
pub fn used_files(layers: Layers, file: &File, text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (from, path) in paths::named_paths(text) {
        if from == "crate" {
            used.insert(cut(layers, &path));
        } else if !file.0.is_empty() && file.1 != "mod" {
            let local = format!("{}::{path}", file.0);
            used.extend(resolve(layers, &local).map(|_| local));
        }
    }
    used
}

/// Every source file of the library in `crate_dir` but `lib.rs`, as `(file, text)`:
/// `src/x.rs` is file `("", "x")`, `src/net/x.rs` is `("net", "x")`; `x_tests.rs` belongs
/// to `x`.
pub fn library_sources(crate_dir: &str) -> Vec<(File, String)> {
    let src = Path::new(crate_dir).join("src");
    let mut files = Vec::new();
    for (folder, path) in rust_files(&src) {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 name");
        let name = stem.strip_suffix("_tests").unwrap_or(stem).to_owned();
        if folder.is_empty() && name == "lib" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("a readable source file");
        files.push(((folder, name), text));
    }
    files.sort();
    files
}

/// The `.rs` files of `src` and of its folders (one level down), with their folder.
fn rust_files(src: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(src).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            let folder = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a UTF-8 name");
            for inner in fs::read_dir(&path).expect("a readable folder") {
                let inner = inner.expect("a directory entry").path();
                found.push((folder.to_owned(), inner));
            }
        } else {
            found.push((String::new(), path));
        }
    }
    found.retain(|(_, p)| p.extension().is_some_and(|e| e == "rs"));
    found
}

/// The files the crate in `crate_dir` declares: `lib.rs`'s modules (`client`), and for a
/// folder the modules its `mod.rs` declares (`net/router`).
pub fn declared_files(crate_dir: &str) -> BTreeSet<String> {
    let src = Path::new(crate_dir).join("src");
    let mut files = BTreeSet::new();
    for module in declared_modules(&src.join("lib.rs")) {
        let folder = src.join(&module).join("mod.rs");
        if folder.exists() {
            files.extend(declared_modules(&folder).map(|m| format!("{module}/{m}")));
        } else {
            files.insert(module);
        }
    }
    files
}

/// The modules the file at `path` declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn declared_modules(path: &Path) -> impl Iterator<Item = String> {
    let text = strip(&fs::read_to_string(path).expect("a readable source file"));
    let lines: Vec<String> = text.lines().map(|l| l.trim().to_owned()).collect();
    lines.into_iter().filter_map(|line| {
        let line = ["pub(crate) ", "pub "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .unwrap_or(&line);
        line.strip_prefix("mod ")?
            .strip_suffix(';')
            .map(str::to_owned)
    })
}

/// Every file the layers name, as [`declared_files`] spells them.
pub fn layered_files(layers: Layers) -> BTreeSet<String> {
    let files = layers.iter().flat_map(|(folder, groups)| {
        let names = groups.iter().flat_map(|g| g.iter());
        names.map(|name| show(&(folder.to_string(), name.to_string())))
    });
    files.collect()
}
