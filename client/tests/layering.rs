//! The client's sources form layers whose imports only point down: `client/src` has one
//! folder per layer (and the public API beside `lib.rs`), and a file may name, in a
//! `crate::` path, only files of the folders below its own, or of the groups before its own
//! in its folder. No import circle either. No server needed: this reads the sources, with
//! the checker in `support/layering.rs`.

#[path = "support/layering.rs"]
mod checker;

use checker::{circles, declared_files, layered_files, library_sources, used_files, File, Layers};

/// The layers, bottom first: each folder (`""`: the files beside `lib.rs`) with its groups
/// of files in order. A file may use every file of the folders before its own, and in its
/// folder those of the groups before its own. `docs/architecture.md` (*Client*) shows the
/// same folders.
const LAYERS: Layers = &[
    (
        "pure",
        &[
            &["ended"],
            &["loss"],
            &["error", "kind", "reply", "scope"],
            &[
                "options", "config", "slots", "info", "rw_info", "sem_info", "commands", "holding",
                "quorum", "pair", "refusal", "naming",
            ],
            &["turns", "per_thread"],
        ],
    ),
    (
        "net",
        &[
            &["node", "sentinel", "identity", "mailbox"],
            &["topology", "channel", "route", "connect"],
            &["push", "pull", "listener"],
            &["router", "pool", "tickets"],
        ],
    ),
    (
        "hold",
        &[
            &["releasing"],
            &["registry"],
            &["rounds"],
            &["watchdog"],
            &["heard"],
        ],
    ),
    ("core", &[&["shared"], &["send", "holds"], &["deliver"]]),
    (
        "acquire",
        &[
            &["guard", "detach"],
            &["wait", "replicas", "scoped"],
            &["recover", "ticket"],
            &["cancel_safe", "latch_wait"],
        ],
    ),
    (
        "",
        &[
            &["lock"],
            &["rw_lock", "latch", "semaphore"],
            &["client"],
            &["blocking_guard", "blocking_latch"],
            &["blocking"],
        ],
    ),
    (
        "several",
        &[
            &["members", "keeper"],
            &["signal"],
            &["multi", "attempt"],
            &["election"],
            &["majority"],
            &["redlock_guard"],
            &["redlock"],
        ],
    ),
];

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

fn violations(files: &[(File, String)]) -> Vec<String> {
    checker::violations(LAYERS, files)
}

#[test]
fn every_file_uses_only_lower_layers() {
    let files = library_sources(CRATE_DIR);
    assert!(files.len() > 40, "found too few sources: {}", files.len());
    let found = violations(&files);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn no_import_circle() {
    let found = circles(LAYERS, &library_sources(CRATE_DIR));
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_layers_name_exactly_the_files_of_the_crate() {
    assert_eq!(layered_files(LAYERS), declared_files(CRATE_DIR));
}

fn file(folder: &str, name: &str, text: &str) -> (File, String) {
    ((folder.to_owned(), name.to_owned()), text.to_owned())
}

#[test]
fn an_upward_or_sideways_use_is_caught() {
    let found = violations(&[
        file("acquire", "guard", "fn f(c: &crate::client::Client) {}"),
        file(
            "net",
            "router",
            "use crate::{hold::registry::Registry, pure::error};",
        ),
        file(
            "acquire",
            "wait",
            "use crate::acquire::{guard::Guard, replicas::confirm};",
        ),
        file("core", "send", "use super::holds;"),
        file("several", "election", "use crate::Error;"),
        file("net", "mod", "pub(crate) use crate::net::router::Router;"),
        file("hold", "renew", ""),
    ]);
    assert_eq!(found.len(), 7, "{found:#?}");
    assert!(found[0].contains("`acquire/guard` uses `client`"));
    assert!(found[1].contains("`net/router` uses `hold/registry`"));
    assert!(found[2].contains("`acquire/wait` uses `acquire/replicas`"));
    assert!(found[3].contains("`core/send` uses `core/holds`"));
    assert!(found[4].contains("`crate::Error`"));
    assert!(found[5].contains("`net/mod.rs` uses `crate::net::router`"));
    assert!(found[6].contains("`hold/renew` is in no layer"));
}

#[test]
fn an_import_circle_is_caught() {
    let found = circles(
        LAYERS,
        &[
            file("net", "push", "use crate::net::pull::Pull;"),
            file("net", "pull", "use super::tickets;"),
            file("net", "tickets", "use crate::net::{push, router};"),
        ],
    );
    assert_eq!(found, ["net/pull -> net/tickets -> net/push -> net/pull"]);
}

#[test]
fn downward_uses_and_uses_in_comments_or_literals_pass() {
    let text = r#"
        use crate::core::shared::Core;
        use crate::{pure::commands, net::pool::{WaitConn, WaitPool}};
        use crate::lock::Lock;
        use super::recover;
        // use crate::client::Client;
        /* crate::lock:: /* nested */ crate::blocking */
        const DOC: &str = "crate::several::redlock";
        const RAW: &str = r"crate::acquire::cancel_safe";
        const Q: char = '"';
        fn f<'a>(x: &'a crate::pure::error::Error) -> crate::pure::options::LockOptions {
            todo!()
        }
        pub(crate) struct S;
    "#;
    let at = ("several".to_owned(), "multi".to_owned());
    assert_eq!(
        used_files(LAYERS, &at, text)
            .into_iter()
            .collect::<Vec<_>>(),
        [
            "core::shared",
            "lock",
            "net::pool",
            "pure::commands",
            "pure::error",
            "pure::options"
        ]
    );
    assert!(violations(&[file("several", "multi", text)]).is_empty());
}
