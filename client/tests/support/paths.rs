//! The paths a Rust source names after `crate::` and `super::`, read as text: comments and
//! literals are left out first (with the module's checker's lexing,
//! `tests/support/layering.rs` at the workspace root). For the client's layering check
//! (`layering.rs`).

#[path = "../../../tests/support/layering.rs"]
mod lexing;

pub use lexing::strip;
use lexing::{is_ident, skip_space};

/// Every path `text` names after `crate::` or `super::`, cut at two names, with the word
/// before it: `("crate", "net::router")` for `crate::net::router::Router`, one per item of
/// a `{...}` group.
pub fn named_paths(text: &str) -> Vec<(&'static str, String)> {
    let code: Vec<char> = strip(text).chars().collect();
    let mut named = Vec::new();
    for at in 0..code.len() {
        let before = at.checked_sub(1).map(|b| code[b]);
        if before.is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        for word in ["crate", "super"] {
            if let Some(after) = after_word(&code, at, word) {
                let mut paths = Vec::new();
                tree(&code, after, String::new(), &mut paths);
                named.extend(paths.into_iter().map(|p| (word, p)));
            }
        }
    }
    named
}

/// Just past `word::` at `at`, if that is what stands there.
fn after_word(code: &[char], at: usize, word: &str) -> Option<usize> {
    let word: Vec<char> = word.chars().collect();
    if !code[at..].starts_with(&word) {
        return None;
    }
    let j = skip_space(code, at + word.len());
    (code.get(j..j + 2) == Some(&[':', ':'][..])).then(|| skip_space(code, j + 2))
}

/// The paths of the use tree at `at` (after a `::`), each cut at two names, into `paths`.
fn tree(code: &[char], at: usize, prefix: String, paths: &mut Vec<String>) {
    if code.get(at) == Some(&'{') {
        let mut item = skip_space(code, at + 1);
        while let Some(&c) = code.get(item) {
            if c == '}' {
                break;
            }
            tree(code, item, prefix.clone(), paths);
            item = skip_space(code, item_end(code, item) + 1);
        }
        return;
    }
    let Some(name) = ident(code, at) else {
        return;
    };
    let path = if prefix.is_empty() {
        name.clone()
    } else {
        format!("{prefix}::{name}")
    };
    let next = skip_space(code, at + name.chars().count());
    if prefix.is_empty() && code.get(next..next + 2) == Some(&[':', ':'][..]) {
        let before = paths.len();
        tree(code, skip_space(code, next + 2), path.clone(), paths);
        if paths.len() > before {
            return;
        }
    }
    paths.push(path);
}

/// The end of the group item that starts at `at`: its `,`, or just before the group's `}`.
fn item_end(code: &[char], at: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(at) {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return k - 1,
            '}' => depth -= 1,
            ',' if depth == 0 => return k,
            _ => {}
        }
    }
    code.len()
}

fn ident(code: &[char], at: usize) -> Option<String> {
    let name: String = code
        .get(at..)?
        .iter()
        .take_while(|c| is_ident(**c))
        .collect();
    let keyword = ["self", "super", "crate"].contains(&name.as_str());
    (!name.is_empty() && !keyword).then_some(name)
}
