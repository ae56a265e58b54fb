//! The docs cannot drift from the code: `README.md`, `CHANGELOG.md` and every page under
//! `docs/` are checked here.
//!
//! - Every relative link points to a file that exists, and its `#anchor` to a heading.
//! - Every `redis-cli` session is replayed against a real server with the module, and the
//!   replies compared (see `tests/docs/transcript.rs` for how a session is written, and
//!   `tests/docs/pattern.rs` for the marks of values that vary: tokens, `~` numbers).
//! - Every Rust sample is an excerpt of an example of the client crate
//!   (`client/examples/*.rs`), which `cargo test` and `cargo clippy` compile; the guide's
//!   (`guide.rs`) also runs against a server in `client/tests/guide.rs`, asserting the
//!   outcomes its comments state.
//! - The client crate's pages say where the module comes from.
//! - The README stays short.

#[path = "docs/markdown.rs"]
mod markdown;
#[path = "docs/pattern.rs"]
mod pattern;
#[path = "docs/resp.rs"]
mod resp;
mod support;
#[path = "docs/transcript.rs"]
mod transcript;

use std::fs;
use std::path::Path;

use markdown::{anchors, blocks, files, links, read, root, shown};
use support::Server;
use transcript::{is_session, looks_like_session, Replay};

/// The README's length limit, in lines.
const README_LINES: usize = 260;

/// Fails with every problem found, one per line.
fn report(problems: Vec<String>) {
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The problem with one link of `page`, if any.
fn broken(page: &Path, target: &str) -> Option<String> {
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        page.parent()?.join(path)
    };
    if !file.exists() {
        return Some(format!("no file {}", file.display()));
    }
    if anchor.is_empty() || file.is_dir() {
        return None;
    }
    let known = anchors(&read(&file));
    (!known.contains(anchor)).then(|| format!("no heading for #{anchor} in {}", shown(&file)))
}

#[test]
fn every_relative_link_points_to_a_file_and_heading() {
    let mut problems = Vec::new();
    for page in files() {
        for (line, target) in links(&read(&page)) {
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|p| target.starts_with(p));
            if external {
                continue;
            }
            if let Some(problem) = broken(&page, &target) {
                problems.push(format!("{}:{line}: ({target}): {problem}", shown(&page)));
            }
        }
    }
    report(problems);
}

#[test]
fn every_transcript_is_marked_for_replay() {
    let mut problems = Vec::new();
    for page in files() {
        for block in blocks(&read(&page)) {
            if looks_like_session(&block) && !is_session(&block) {
                let where_ = format!("{}:{}", shown(&page), block.line);
                problems.push(format!(
                    "{where_}: a session in a block not marked ```redis-cli"
                ));
            }
        }
    }
    report(problems);
}

#[test]
fn redis_cli_transcripts_replay_against_the_module() {
    let mut problems = Vec::new();
    for page in files() {
        let all = blocks(&read(&page));
        if !all.iter().any(is_session) {
            continue;
        }
        let server = Server::start();
        let mut replay = match Replay::new(server.port()) {
            Ok(replay) => replay,
            Err(e) => panic!("connect: {e}"),
        };
        for block in &all {
            if let Err(problem) = replay.block(block) {
                problems.push(format!("{}: {problem}", shown(&page)));
                break;
            }
        }
    }
    report(problems);
}

/// The lines of every example of the client crate, trimmed.
fn example_lines() -> Vec<(String, Vec<String>)> {
    let dir = root().join("client/examples");
    let mut found = Vec::new();
    for entry in fs::read_dir(&dir).expect("client/examples") {
        let path = entry.expect("an entry").path();
        let lines = read(&path).lines().map(|l| l.trim().to_owned()).collect();
        found.push((shown(&path), lines));
    }
    found
}

#[test]
fn every_rust_sample_is_an_excerpt_of_a_compiled_example() {
    let examples = example_lines();
    let mut problems = Vec::new();
    for page in files() {
        for block in blocks(&read(&page))
            .iter()
            .filter(|b| b.lang().starts_with("rust"))
        {
            let sample: Vec<&str> = block.lines.iter().map(|l| l.trim()).collect();
            let found = examples.iter().any(|(_, lines)| {
                lines
                    .windows(sample.len())
                    .any(|w| w.iter().zip(&sample).all(|(a, b)| a == b))
            });
            if !found {
                let where_ = format!("{}:{}", shown(&page), block.line);
                problems.push(format!("{where_}: not an excerpt of client/examples/*.rs"));
            }
        }
    }
    report(problems);
}

#[test]
fn the_client_crate_says_where_the_module_comes_from() {
    let mut problems = Vec::new();
    for page in ["client/README.md", "client/src/lib.rs"] {
        let text = read(&root().join(page));
        for needed in ["make dist", "make install", "loadmodule"] {
            if !text.contains(needed) {
                problems.push(format!("{page}: does not say `{needed}`"));
            }
        }
        if text.contains("target/release/librlock.so") {
            problems.push(format!("{page}: names a path in a checkout"));
        }
    }
    report(problems);
}

#[test]
fn readme_stays_short() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines < README_LINES,
        "README.md has {lines} lines; at most {README_LINES}: move details to docs/"
    );
}
