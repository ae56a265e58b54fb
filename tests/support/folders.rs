//! The folder check of the module's `layering.rs`: a crate's `src/` as folders (`src/x/`,
//! or one file `src/x.rs`), each file of a folder in a group. A file may name, in a
//! `crate::` path, the folders of lower layers, its own folder's `mod.rs`, and the files of
//! lower groups of its own folder (also as `super::<file>`); and the files' uses must form
//! no circle. Textual, like the layer check it builds on (`layering.rs`).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::checker::{ident, is_ident, place, skip_space, strip, Layers};

#[path = "cycles.rs"]
mod cycles;

/// Each folder, with its files (`mod.rs` aside) in groups, bottom first: a file may use
/// the files of the groups before its own. A folder not listed is not ordered inside.
pub type Folders = &'static [(&'static str, &'static [&'static [&'static str]])];

/// A source file: its folder, its file (`mod` for `mod.rs`, `src/x.rs` and tests beside
/// it), and its text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    pub folder: String,
    pub file: String,
    pub text: String,
}

pub fn source(folder: &str, file: &str, text: &str) -> Source {
    let (folder, file, text) = (folder.to_owned(), file.to_owned(), text.to_owned());
    Source { folder, file, text }
}

/// Every source of `crate_dir/src` but `lib.rs` and `bin/`.
pub fn folder_sources(crate_dir: &str) -> Vec<Source> {
    let src = Path::new(crate_dir).join("src");
    let mut files = Vec::new();
    collect(&src, &src, &mut files);
    files.sort();
    files
}

fn collect(src: &Path, dir: &Path, files: &mut Vec<Source>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let relative = path.strip_prefix(src).expect("under src/");
        let parts: Vec<&str> = relative
            .iter()
            .map(|p| p.to_str().expect("UTF-8"))
            .collect();
        if parts[0] == "bin" || parts[0] == "lib.rs" {
            continue;
        }
        if path.is_dir() {
            collect(src, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = |s: &str| {
                let stem = s.trim_end_matches(".rs");
                stem.strip_suffix("_tests").unwrap_or(stem).to_owned()
            };
            let (folder, file) = match parts.as_slice() {
                [one] => (name(one), "mod".to_owned()),
                [folder, file] => (name(folder), name(file)),
                [folder, file, ..] => (name(folder), name(file)),
                [] => continue,
            };
            let text = fs::read_to_string(&path).expect("a readable source file");
            files.push(Source { folder, file, text });
        }
    }
}

/// The `(folder, next name)` of every `crate::` path in `text`, and the names after
/// `super::` (comments and literals left out).
pub fn used_paths(text: &str) -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let code: Vec<char> = strip(text).chars().collect();
    let (mut crate_paths, mut supers) = (BTreeSet::new(), BTreeSet::new());
    for at in 0..code.len() {
        let before = at.checked_sub(1).map(|b| code[b]);
        if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        for (word, is_crate) in [("crate", true), ("super", false)] {
            let Some(after) = after_word(&code, at, word) else {
                continue;
            };
            let mut paths = Vec::new();
            tree(&code, after, Vec::new(), &mut paths);
            for path in paths {
                match (is_crate, path.as_slice()) {
                    (true, [folder, next, ..]) => {
                        crate_paths.insert((folder.clone(), next.clone()))
                    }
                    (true, [folder]) => crate_paths.insert((folder.clone(), "mod".to_owned())),
                    (false, [file, ..]) => supers.insert(file.clone()),
                    _ => false,
                };
            }
        }
    }
    (crate_paths, supers)
}

/// Where the path after `word::` starts, if `word::` is at `at`.
fn after_word(code: &[char], at: usize, word: &str) -> Option<usize> {
    let chars: Vec<char> = word.chars().collect();
    if !code[at..].starts_with(&chars) {
        return None;
    }
    let j = skip_space(code, at + chars.len());
    (code.get(j..j + 2) == Some(&[':', ':'][..])).then(|| skip_space(code, j + 2))
}

/// The paths (their first two names) of the use tree at `at`, each after `prefix`.
fn tree(code: &[char], at: usize, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    if code.get(at) == Some(&'{') {
        let (mut depth, mut item_start) = (0, true);
        for k in at + 1..code.len() {
            match code[k] {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if depth == 0 && item_start && !c.is_whitespace() => {
                    item_start = false;
                    tree(code, k, prefix.clone(), paths);
                }
                _ => {}
            }
        }
        return;
    }
    let Some(name) = ident(code, at) else {
        paths.push(prefix);
        return;
    };
    let mut path = prefix;
    path.push(name.clone());
    let j = skip_space(code, at + name.chars().count());
    if path.len() < 2 && code.get(j..j + 2) == Some(&[':', ':'][..]) {
        tree(code, skip_space(code, j + 2), path, paths);
    } else {
        paths.push(path);
    }
}

/// A file's group in its folder (bottom 0); `None` if its folder is not ordered.
fn group_of(folders: Folders, folder: &str, file: &str) -> Option<Option<usize>> {
    let (_, groups) = folders.iter().find(|(name, _)| *name == folder)?;
    Some(groups.iter().position(|group| group.contains(&file)))
}

/// The files each `(folder, file)` of `sources` uses, each as `(folder, file)`: a name
/// that is not a file of the folder stands for its `mod.rs`.
pub fn uses(sources: &[Source]) -> BTreeMap<(String, String), BTreeSet<(String, String)>> {
    let files: BTreeSet<(String, String)> = sources
        .iter()
        .map(|s| (s.folder.clone(), s.file.clone()))
        .collect();
    let mut all: BTreeMap<_, BTreeSet<_>> = BTreeMap::new();
    for s in sources {
        let (crate_paths, supers) = used_paths(&s.text);
        let nested = s.file != "mod";
        let supers = supers.into_iter().filter(|_| nested);
        let supers = supers.map(|file| (s.folder.clone(), file));
        let resolve = |(folder, file): (String, String)| {
            let file = if files.contains(&(folder.clone(), file.clone())) {
                file
            } else {
                "mod".to_owned()
            };
            (folder, file)
        };
        let used = crate_paths.into_iter().chain(supers).map(resolve);
        let me = (s.folder.clone(), s.file.clone());
        all.entry(me.clone())
            .or_default()
            .extend(used.filter(|u| *u != me));
    }
    all
}

/// Why the uses of `sources` break the folders' layering; empty if none does.
pub fn folder_violations(layers: Layers, folders: Folders, sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for ((folder, file), used) in uses(sources) {
        let me = format!("`{folder}/{file}`");
        let Some((rank, layer)) = place(layers, &folder) else {
            found.push(format!("folder `{folder}` is in no layer"));
            continue;
        };
        let my_group = group_of(folders, &folder, &file);
        if file != "mod" && my_group == Some(None) {
            found.push(format!("{me} is in no group of its folder"));
        }
        for (to_folder, to_file) in used {
            let them = format!("`{to_folder}/{to_file}`");
            if to_folder != folder {
                match place(layers, &to_folder) {
                    None => found.push(format!(
                        "{me} uses `crate::{to_folder}`, which is no folder of the layers"
                    )),
                    Some((r, l)) if r >= rank => found.push(format!(
                        "{me} ({layer}) uses {them} ({l}): not a lower layer"
                    )),
                    Some(_) => {}
                }
                continue;
            }
            if file == "mod" || to_file == "mod" {
                continue;
            }
            let theirs = group_of(folders, &folder, &to_file);
            if let (Some(Some(mine)), Some(Some(theirs))) = (my_group, theirs) {
                if theirs >= mine {
                    found.push(format!(
                        "{me} uses {them}: not a lower group of `{folder}/`"
                    ));
                }
            }
        }
    }
    found
}

/// Every import circle among the files of `sources`, each as `a → b → a`.
pub fn circles(sources: &[Source]) -> Vec<String> {
    let named = cycles::find(&uses(sources)).into_iter().map(|circle| {
        let names: Vec<String> = circle.iter().map(|(d, f)| format!("{d}/{f}")).collect();
        names.join(" → ")
    });
    named.collect::<BTreeSet<String>>().into_iter().collect()
}

/// Each folder's files, `mod.rs` aside, as the sources have them.
pub fn folder_files(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources.iter().filter(|s| s.file != "mod") {
        files
            .entry(s.folder.clone())
            .or_default()
            .insert(s.file.clone());
    }
    files
}

/// Each folder's files as `folders` groups them.
pub fn grouped_files(folders: Folders) -> BTreeMap<String, BTreeSet<String>> {
    let files = folders.iter().map(|(folder, groups)| {
        let names = groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|f| (*f).to_owned());
        ((*folder).to_owned(), names.collect())
    });
    files.collect()
}
