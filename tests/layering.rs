//! The module's sources form layers whose imports only point down: `src/` has one folder
//! per layer, and a file may name, in a `crate::` path, only the folders of lower layers,
//! its own folder's `mod.rs`, and the files of lower groups of its own folder (`lib.rs`,
//! the top, aside). Below them all is the crate `rlock-core` (`core/`), whose modules are
//! layered the same way. No import circle anywhere. docs/architecture.md draws the same
//! layers.

#[path = "support/layering.rs"]
mod checker;
#[path = "support/folders.rs"]
mod folders;

use checker::{declared_modules, layered_modules, Layers};
use folders::{
    circles, folder_files, folder_sources, folder_violations, grouped_files, source, Folders,
};

/// The module's folders, bottom first: a folder may use the folders of the layers below.
const LAYERS: Layers = &[
    ("redis primitives", &[&["host"]]),
    ("state", &[&["store"]]),
    ("blocked clients and tickets", &[&["waits"]]),
    ("handoff", &[&["handoff"]]),
    ("commands and events", &[&["commands", "hooks"]]),
];

/// Each folder's files (`mod.rs` aside) in groups, bottom first.
const FOLDERS: Folders = &[
    (
        "host",
        &[
            &["ffi", "apis", "spec", "valkey"],
            &["guard", "node", "declare"],
            &["config"],
            &["config_hooks"],
            &["gate", "call"],
        ],
    ),
    (
        "store",
        &[
            &["write", "read_own", "publish", "rw", "rw_live", "latch"],
            &["persist", "sem"],
            &["slot_keys"],
        ],
    ),
    (
        "waits",
        &[
            &["queues"],
            &["blocked"],
            &["tickets"],
            &["finish", "receiver"],
        ],
    ),
    (
        "handoff",
        &[
            &["script_turns", "losses"],
            &["door"],
            &[
                "rw_serve",
                "rw_lease",
                "latch_serve",
                "sem_serve",
                "evicted",
            ],
            &["family_checks"],
            &["expiry"],
            &["take", "rw_take", "sem_take", "heartbeat"],
            &["blocked_wait"],
            &["ticket_wait"],
        ],
    ),
    (
        "commands",
        &[
            &["dispatch"],
            &[
                "acquire",
                "apply",
                "cancel",
                "listen",
                "fenced",
                "forcerelease",
                "grants",
                "info",
                "latch_await",
                "latch_count",
                "latch_countdown",
                "latch_set",
                "latch_wait",
                "raise",
                "release",
                "renew",
                "rw_acquire",
                "rw_apply",
                "rw_forcerelease",
                "rw_info",
                "rw_release",
                "rw_renew",
                "rw_wait",
                "sem_acquire",
                "sem_apply",
                "sem_forcerelease",
                "sem_info",
                "sem_permits",
                "sem_release",
                "sem_renew",
                "sem_wait",
                "wait",
            ],
            &["rw_table", "latch_table", "sem_table"],
        ],
    ),
    ("hooks", &[&["events", "info_section", "migration"]]),
];

/// The modules of `rlock-core`, bottom first, each with its groups in order.
const CORE_LAYERS: Layers = &[(
    "pure",
    &[
        &[
            "echo", "token", "channel", "counters", "idhash", "reply", "stall", "verdict",
            "cluster", "kind", "layout", "loss",
        ],
        &["fence_error"],
        &["error"],
        &["args", "registry"],
        &["lock", "rwlock", "receivers", "watch"],
        &["parse", "rwglance", "semaphore"],
        &["fence", "semglance"],
    ],
)];

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");
const CORE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/core");

#[test]
fn every_file_uses_only_lower_layers_and_groups() {
    let files = folder_sources(CRATE_DIR);
    assert!(files.len() > 30, "found too few sources: {}", files.len());
    let found = folder_violations(LAYERS, FOLDERS, &files);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn every_core_module_uses_only_lower_ones() {
    let files = folder_sources(CORE_DIR);
    assert!(files.len() > 15, "found too few sources: {}", files.len());
    let found = folder_violations(CORE_LAYERS, &[], &files);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn no_import_circle() {
    // Every package of the workspace, the module's and the core's first.
    let others = ["client", "cli", "bench", "chaos"].map(|p| format!("{CRATE_DIR}/{p}"));
    let dirs = [CRATE_DIR, CORE_DIR]
        .into_iter()
        .chain(others.iter().map(String::as_str));
    for dir in dirs {
        let found = circles(&folder_sources(dir));
        assert!(
            found.is_empty(),
            "import circles in {dir}:\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn the_layers_name_exactly_the_folders_and_files() {
    assert_eq!(layered_modules(LAYERS), declared_modules(CRATE_DIR));
    assert_eq!(layered_modules(CORE_LAYERS), declared_modules(CORE_DIR));
    assert_eq!(
        grouped_files(FOLDERS),
        folder_files(&folder_sources(CRATE_DIR))
    );
}

#[test]
fn an_upward_or_sideways_use_is_caught() {
    let upward = source("store", "mod", "fn f() { crate::handoff::expiry::arm(); }");
    let sideways = source(
        "waits",
        "queues",
        "use crate::waits::{blocked, tickets::Me};",
    );
    let nested = source("waits", "blocked", "use super::finish::refuse;");
    let root = source("handoff", "door", "use crate::TOKENS;");
    let used = ["handoff/expiry", "waits/tickets", "waits/finish"].map(|f| {
        let (folder, file) = f.split_once('/').unwrap();
        source(folder, file, "")
    });
    let mut files = vec![upward, sideways, nested, root];
    files.extend(used);
    let found = folder_violations(LAYERS, FOLDERS, &files);
    assert_eq!(found.len(), 5, "{found:#?}");
    let caught = |text: &str| found.iter().any(|f| f.contains(text));
    assert!(caught("`handoff/door` uses `crate::TOKENS`"), "{found:#?}");
    assert!(caught(
        "`store/mod` (state) uses `handoff/expiry` (handoff)"
    ));
    assert!(caught(
        "`waits/queues` uses `waits/blocked`: not a lower group"
    ));
    assert!(caught(
        "`waits/queues` uses `waits/tickets`: not a lower group"
    ));
    assert!(caught(
        "`waits/blocked` uses `waits/finish`: not a lower group"
    ));
}

#[test]
fn an_import_circle_is_caught() {
    let files = [
        source("host", "ffi", "use crate::host::node::now;"),
        source("host", "node", "use crate::store::Name;"),
        source("store", "mod", "fn f() { crate::host::ffi::api(); }"),
        source("waits", "queues", "use super::blocked;"),
        source("waits", "blocked", "use crate::waits::queues;"),
    ];
    let found = circles(&files);
    assert_eq!(
        found,
        [
            "host/ffi → host/node → store/mod → host/ffi",
            "waits/blocked → waits/queues → waits/blocked",
        ],
    );
}
