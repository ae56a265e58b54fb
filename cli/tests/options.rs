//! `rlock`'s options: values that cannot work are usage errors (exit 2, as clap's), and the
//! connection options may come before or after the subcommand.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::process::{Command, Output, Stdio};

use support::Server;
use tool::{rlock, text};

/// `rlock ARGS` with no `--url` of the test's adding and no `RLOCK_URL`.
fn bare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rlock"))
        .env_remove("RLOCK_URL")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run rlock")
}

#[test]
fn option_values_that_cannot_work_are_usage_errors() {
    let server = Server::start();
    let url = server.url();
    let refused: [(&[&str], &str); 7] = [
        (&["run", "job", "--lease", "0"], "--lease"),
        (&["run", "job", "--lease", "0ms"], "--lease"),
        (&["run", "job", "--lease=-1s"], "--lease"),
        (&["run", "job", "--lease", "1x"], "--lease"),
        (&["run", "job", "--check", "0"], "--check"),
        (&["--timeout", "0", "run", "job"], "--timeout"),
        (&["run", "job", "--wait=-1"], "--wait"),
    ];
    for (options, named) in refused {
        let mut args = vec!["--url", &url];
        args.extend_from_slice(options);
        args.extend_from_slice(&["--", "echo", "ran"]);
        let out = bare(&args);
        assert_eq!(out.status.code(), Some(2), "{options:?}: {out:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(named), "{options:?}: {stderr}");
        assert!(out.stdout.is_empty(), "the command ran: {out:?}");
    }
    let out = bare(&["--url", &url, "run", "job", "--lease", "0", "--", "true"]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("must be longer than 0"), "{stderr}");
    assert_eq!(server.info("job"), None, "nothing is held");
}

#[test]
fn connection_options_go_before_or_after_the_subcommand() {
    let server = Server::start();
    let url = server.url();
    let positions: [&[&str]; 3] = [
        &[
            "--url",
            &url,
            "--timeout",
            "1s",
            "run",
            "job",
            "--",
            "echo",
            "ran",
        ],
        &[
            "run",
            "--url",
            &url,
            "--timeout",
            "1s",
            "job",
            "--",
            "echo",
            "ran",
        ],
        &[
            "run",
            "job",
            "--url",
            &url,
            "--timeout=1s",
            "--",
            "echo",
            "ran",
        ],
    ];
    for args in positions {
        let out = bare(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(text(&out.stdout), "ran\n", "{args:?}");
    }
    server.hold("job", "someone", &[]);
    for args in [
        ["info", "job", "--url", &url],
        ["info", "--url", &url, "job"],
    ] {
        let out = bare(&args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(text(&out.stdout).contains("owner: someone\n"), "{out:?}");
    }
    let out = bare(&["release", "job", "--force", "--url", &url]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.info("job"), None);
    // After the subcommand, a bad value is a usage error there too.
    let out = rlock(&server, &["run", "job", "--timeout", "0", "--", "true"])
        .output()
        .expect("run rlock");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
