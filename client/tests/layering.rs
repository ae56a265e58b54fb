//! The client's modules form layers whose imports only point down: each file of `src/` may
//! name, in a `crate::<module>` path, only modules of lower layers. No server needed: this
//! reads the sources, with the checker the module's own layering test uses
//! (`tests/support/layering.rs` at the workspace root).

#[path = "../../tests/support/layering.rs"]
mod checker;

use checker::{declared_modules, layered_modules, library_sources, used_modules, Layers};

/// The layers, bottom first, each with its groups in order: a module may use the modules
/// of the groups before its own, and none of its own group or above. The README's
/// *Architecture* section lists the same layers.
const LAYERS: Layers = &[
    (
        "pure pieces",
        &[
            &["error"],
            &[
                "options", "config", "slots", "info", "commands", "holding", "quorum", "pair",
            ],
            &["releasing", "turns", "per_thread"],
            &["registry", "mailbox"],
        ],
    ),
    (
        "transport",
        &[
            &["node", "sentinel", "identity"],
            &["topology", "channel"],
            &["push", "pull"],
            &["router", "pool", "tickets"],
        ],
    ),
    ("watchdog", &[&["rounds"], &["watchdog"]]),
    ("core", &[&["core"]]),
    (
        "guard and acquisition",
        &[
            &["guard", "detach"],
            &["wait", "replicas"],
            &["recover", "ticket"],
            &["acquire"],
        ],
    ),
    ("public API", &[&["lock"], &["client"], &["blocking"]]),
    (
        "several servers",
        &[
            &["members", "keeper"],
            &["signal"],
            &["multi", "attempt"],
            &["election"],
            &["redlock_guard"],
            &["redlock"],
        ],
    ),
];

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn violations(files: &[(String, String)]) -> Vec<String> {
    checker::violations(LAYERS, files)
}

#[test]
fn every_module_uses_only_lower_layers() {
    let files = library_sources(CRATE_DIR);
    assert!(files.len() > 10, "found too few sources: {}", files.len());
    let found = violations(&files);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn the_layers_name_exactly_the_modules_of_the_crate() {
    assert_eq!(layered_modules(LAYERS), declared_modules(CRATE_DIR));
}

fn file(module: &str, text: &str) -> (String, String) {
    (module.to_owned(), text.to_owned())
}

#[test]
fn an_upward_or_sideways_use_is_caught() {
    let upward = file("guard", "fn f(c: &crate::client::Client) {}");
    let sideways = file("wait", "use crate::{error::Error, replicas::confirm};");
    let root = file("core", "use crate::Error;");
    let found = violations(&[upward, sideways, root]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("`guard` (guard and acquisition) uses `client`"));
    assert!(found[1].contains("`wait` (guard and acquisition) uses `replicas`"));
    assert!(found[2].contains("`crate::Error`"));
}

#[test]
fn downward_uses_and_uses_in_comments_or_literals_pass() {
    let text = r#"
        use crate::core::Core;
        use crate::{commands, pool::{WaitConn, WaitPool}};
        // use crate::client::Client;
        /* crate::lock:: /* nested */ crate::blocking */
        const DOC: &str = "crate::client";
        const RAW: &str = r"crate::lock";
        const Q: char = '"';
        fn f<'a>(x: &'a crate::error::Error) -> crate::options::LockOptions { todo!() }
        pub(crate) struct S;
    "#;
    assert_eq!(
        used_modules(text).into_iter().collect::<Vec<_>>(),
        ["commands", "core", "error", "options", "pool"]
    );
    assert!(violations(&[file("acquire", text)]).is_empty());
}
