//! The layering check of the module's `layering.rs` (its lexing, `strip`, is the client's
//! too): each file of a crate's `src/` may name, in a `crate::<module>` path, only modules
//! of lower layers. No server needed: this reads the sources.
//!
//! The check is textual: comments and literals are left out, then every `crate::<name>`
//! (in `use` lines and inline paths, `crate::{a, b}` groups included) counts as a use of
//! module `<name>`. A name that is not a module of the layers (a re-export from the crate
//! root, a new module nobody placed) fails the check too.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Layers, bottom first, each with its groups in order: a module may use the modules of the
/// groups before its own, and none of its own group or above.
pub type Layers = &'static [(&'static str, &'static [&'static [&'static str]])];

/// A module's place: its group's rank (bottom 0) and its layer's name.
pub fn place(layers: Layers, module: &str) -> Option<(usize, &'static str)> {
    let groups = layers
        .iter()
        .flat_map(|(layer, groups)| groups.iter().map(move |group| (*layer, *group)));
    groups
        .enumerate()
        .find(|(_, (_, group))| group.contains(&module))
        .map(|(rank, (layer, _))| (rank, layer))
}

/// Why the uses of each `(module, source)` break the layering; empty if none does.
pub fn violations(layers: Layers, files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (module, text) in files {
        let Some((rank, layer)) = place(layers, module) else {
            found.push(format!("module `{module}` is in no layer"));
            continue;
        };
        for used in used_modules(text) {
            match place(layers, &used) {
                None => found.push(format!(
                    "`{module}` uses `crate::{used}`, which is no module of the layers"
                )),
                Some(_) if used == *module => {}
                Some((used_rank, used_layer)) if used_rank >= rank => found.push(format!(
                    "`{module}` ({layer}) uses `{used}` ({used_layer}): not a lower layer"
                )),
                Some(_) => {}
            }
        }
    }
    found
}

const CRATE: [char; 5] = ['c', 'r', 'a', 't', 'e'];

/// The names that follow `crate::` in `text`, comments and literals left out.
pub fn used_modules(text: &str) -> BTreeSet<String> {
    let code: Vec<char> = strip(text).chars().collect();
    let mut used = BTreeSet::new();
    for at in 0..code.len() {
        let before = at.checked_sub(1).map(|b| code[b]);
        if !code[at..].starts_with(&CRATE) || before.is_some_and(|c| is_ident(c) || c == '$') {
            continue;
        }
        let j = skip_space(&code, at + CRATE.len());
        if code.get(j..j + 2) != Some(&[':', ':'][..]) {
            continue;
        }
        let j = skip_space(&code, j + 2);
        if code.get(j) == Some(&'{') {
            used.extend(group_heads(&code, j + 1));
        } else {
            used.extend(ident(&code, j));
        }
    }
    used
}

/// The first name of each item of the `{...}` group that starts at `from` (after the `{`).
fn group_heads(code: &[char], from: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let (mut depth, mut item_start) = (0, true);
    for (k, &c) in code.iter().enumerate().skip(from) {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                item_start = false;
                heads.extend(ident(code, k));
            }
            _ => {}
        }
    }
    heads
}

pub fn ident(code: &[char], at: usize) -> Option<String> {
    let name: String = code[at..].iter().take_while(|c| is_ident(**c)).collect();
    let keyword = ["self", "super", "crate"].contains(&name.as_str());
    (!name.is_empty() && !keyword).then_some(name)
}

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

pub fn skip_space(code: &[char], mut i: usize) -> usize {
    while code.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// `text` with comments, string literals and char literals blanked out.
pub fn strip(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < s.len() {
        let next = s.get(i + 1).copied();
        let end = match (s[i], next) {
            ('/', Some('/')) => (i..s.len()).find(|&k| s[k] == '\n').unwrap_or(s.len()),
            ('/', Some('*')) => block_comment_end(&s, i),
            ('"', _) => string_end(&s, i + 1),
            ('r', Some('"' | '#')) if i == 0 || !is_ident(s[i - 1]) => raw_string_end(&s, i),
            ('\'', Some('\\')) => (i + 2..s.len())
                .find(|&k| s[k] == '\'')
                .map_or(s.len(), |k| k + 1),
            ('\'', Some(_)) if s.get(i + 2) == Some(&'\'') => i + 3,
            (c, _) => {
                out.push(c);
                i += 1;
                continue;
            }
        };
        out.push(' ');
        i = end.max(i + 1);
    }
    out
}

fn block_comment_end(s: &[char], start: usize) -> usize {
    let (mut depth, mut k) = (0, start);
    while k + 1 < s.len() {
        match (s[k], s[k + 1]) {
            ('/', '*') => (depth, k) = (depth + 1, k + 2),
            ('*', '/') if depth == 1 => return k + 2,
            ('*', '/') => (depth, k) = (depth - 1, k + 2),
            _ => k += 1,
        }
    }
    s.len()
}

fn string_end(s: &[char], mut k: usize) -> usize {
    while k < s.len() {
        match s[k] {
            '\\' => k += 2,
            '"' => return k + 1,
            _ => k += 1,
        }
    }
    s.len()
}

/// The end of `r"..."` or `r#"..."#` at `start`; just past the `r` if it is none.
fn raw_string_end(s: &[char], start: usize) -> usize {
    let hashes = s[start + 1..].iter().take_while(|&&c| c == '#').count();
    let open = start + 1 + hashes;
    if s.get(open) != Some(&'"') {
        return start + 1;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    (open + 1..s.len())
        .find(|&k| s[k..].starts_with(&close))
        .map_or(s.len(), |k| k + close.len())
}

/// Every source file of the library in `crate_dir`, as `(module, text)`: `src/x.rs`,
/// `src/x/...` and `src/x_tests.rs` belong to module `x`.
pub fn library_sources(crate_dir: &str) -> Vec<(String, String)> {
    let src = Path::new(crate_dir).join("src");
    let mut files = Vec::new();
    collect(&src, &src, &mut files);
    files.sort();
    files
}

fn collect(src: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        let relative = path.strip_prefix(src).expect("under src/");
        let top = relative.components().next().expect("a first component");
        let top = top.as_os_str().to_str().expect("a UTF-8 file name");
        if top == "bin" || top == "lib.rs" {
            continue;
        }
        if path.is_dir() {
            collect(src, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let stem = top.trim_end_matches(".rs");
            let module = stem.strip_suffix("_tests").unwrap_or(stem);
            let text = fs::read_to_string(&path).expect("a readable source file");
            files.push((module.to_owned(), text));
        }
    }
}

/// The modules `src/lib.rs` of `crate_dir` declares.
pub fn declared_modules(crate_dir: &str) -> BTreeSet<String> {
    let lib = Path::new(crate_dir).join("src/lib.rs");
    let text = strip(&fs::read_to_string(lib).expect("src/lib.rs is readable"));
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            line.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_owned)
        })
        .collect()
}

/// Every module the layers name.
pub fn layered_modules(layers: Layers) -> BTreeSet<String> {
    layers
        .iter()
        .flat_map(|(_, groups)| groups.iter().flat_map(|g| g.iter()))
        .map(|m| (*m).to_owned())
        .collect()
}
