//! The little of Markdown the docs' checks need: the files, their fenced blocks, their
//! relative links and the anchors GitHub makes of their headings.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A fenced block: its info string (`redis-cli -3`), its lines, and the line of its fence.
pub struct Block {
    pub info: String,
    pub lines: Vec<String>,
    pub line: usize,
}

impl Block {
    /// The first word of the info string (`rust`, `redis-cli`), or "".
    pub fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md`, `CHANGELOG.md` and every `.md` under `docs/`, sorted.
pub fn files() -> Vec<PathBuf> {
    let mut found = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The path relative to the root, for messages.
pub fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Every fenced block (```` ``` ```` fences), in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        match (open.take(), fence(line)) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_owned(),
                    lines: Vec::new(),
                    line: n + 1,
                })
            }
            (Some(block), Some(_)) => found.push(block),
            (Some(mut block), None) => {
                block.lines.push(line.to_owned());
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    found
}

/// The info string of a fence line (```` ```rust ````); as in CommonMark, a line whose
/// "info string" holds a backtick is inline code, not a fence.
fn fence(line: &str) -> Option<&str> {
    let info = line
        .trim_start()
        .strip_prefix("```")?
        .trim_start_matches('`');
    (!info.contains('`')).then_some(info)
}

/// The lines outside fenced blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if fence(line).is_some() {
            inside = !inside;
            continue;
        }
        if !inside {
            out.push((n + 1, line.to_owned()));
        }
    }
    out
}

/// A line with its `code spans` emptied (their text cannot hold links).
fn without_code(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// The targets of the inline links `[text](target)`, with their line numbers.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose(text) {
        let line = without_code(&line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            found.push((n, target.to_owned()));
            rest = &rest[end..];
        }
    }
    found
}

/// The anchors GitHub gives the headings of a page (`## Failover delay: x` →
/// `failover-delay-x`), a repeated one suffixed `-1`, `-2`, ...
pub fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    for (_, line) in prose(text) {
        let line = line.replace('`', "");
        let Some(title) = heading(&line) else {
            continue;
        };
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while !found.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    found
}

fn heading(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    line[hashes..].strip_prefix(' ').map(str::trim)
}

/// GitHub's slug: lower case, spaces to `-`, every other character but letters, digits,
/// `-` and `_` dropped.
pub fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
