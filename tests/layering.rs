//! The module's files form layers whose imports only point down: each file of `src/` may
//! name, in a `crate::<module>` path, only modules of lower layers (`lib.rs`, the top,
//! aside). The README's *Architecture* section lists the same layers.

#[path = "support/layering.rs"]
mod checker;

use checker::{declared_modules, layered_modules, library_sources, violations, Layers};

/// The layers, bottom first, each with its groups in order: a module may use the modules of
/// the groups before its own, and none of its own group or above.
const LAYERS: Layers = &[
    (
        "pure",
        &[
            &[
                "echo", "token", "channel", "counters", "idhash", "reply", "spec", "stall",
                "verdict",
            ],
            &["fence_error"],
            &["error"],
            &["args", "registry"],
            &["lock", "receivers"],
        ],
    ),
    (
        "redis primitives",
        &[
            &["ffi", "apis", "cluster"],
            &["guard", "node", "register", "fence"],
            &["config"],
            &["configs"],
            &["gate", "inner"],
        ],
    ),
    ("state", &[&["waiters", "store", "publish"], &["persist"]]),
    (
        "blocked clients",
        &[&["blocked"], &["tickets"], &["ending"]],
    ),
    (
        "handoff",
        &[
            &["handoff"],
            &["expiry"],
            &["waiting", "heartbeat"],
            &["receiving"],
        ],
    ),
    (
        "commands and events",
        &[&["dispatch"], &["commands", "info", "events"]],
    ),
];

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn every_module_uses_only_lower_layers() {
    let files = library_sources(CRATE_DIR);
    assert!(files.len() > 20, "found too few sources: {}", files.len());
    let found = violations(LAYERS, &files);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn the_layers_name_exactly_the_modules_of_the_crate() {
    assert_eq!(layered_modules(LAYERS), declared_modules(CRATE_DIR));
}

#[test]
fn an_upward_or_sideways_use_is_caught() {
    let file = |module: &str, text: &str| (module.to_owned(), text.to_owned());
    let upward = file("store", "fn f() { crate::expiry::arm(); }");
    let sideways = file("waiters", "use crate::{registry::Db, store::LockKey};");
    let root = file("handoff", "use crate::TOKENS;");
    let found = violations(LAYERS, &[upward, sideways, root]);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("`store` (state) uses `expiry`"));
    assert!(found[1].contains("`waiters` (state) uses `store`"));
    assert!(found[2].contains("`crate::TOKENS`"));
}
