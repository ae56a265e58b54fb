//! `rlock run --permits N`: one of N permits of a semaphore, so at most N commands run at once.

// The client crate's test support: a redis-server of its own per test.
#[path = "../../client/tests/support/mod.rs"]
mod support;
mod tool;

use std::process::Output;

use support::Server;
use tool::{info_field, rlock, text, Scratch};

fn number(server: &Server, key: &str, name: &str) -> i64 {
    info_field(server, "SEM.INFO", key, name).map_or(-1, |v| redis::from_redis_value(v).unwrap())
}

#[test]
fn three_runs_on_two_permits_run_at_most_two_at_once() {
    let server = Server::start();
    let scratch = Scratch::new("permits");
    let dir = scratch.path("");
    // Each command marks itself running, writes how many are running, stays 1 s, unmarks.
    let script = "touch \"$0/run.$1\"; ls \"$0\" | grep -c '^run\\.' >> \"$0/seen\"; \
                  sleep 1; rm \"$0/run.$1\"";
    let spawn = |name: &str| {
        let args = [
            "run",
            "--permits",
            "2",
            "pool",
            "--",
            "sh",
            "-c",
            script,
            &dir,
            name,
        ];
        rlock(&server, &args).spawn().expect("spawn rlock")
    };
    let runs = [spawn("a"), spawn("b"), spawn("c")];
    let outputs: Vec<Output> = runs
        .into_iter()
        .map(|run| run.wait_with_output().expect("wait for rlock"))
        .collect();
    for output in &outputs {
        assert!(output.status.success(), "{output:?}");
    }
    let seen = std::fs::read_to_string(scratch.path("seen")).unwrap();
    let counts: Vec<u32> = seen.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(counts.len(), 3, "every command ran: {seen:?}");
    assert!(counts.iter().all(|&n| (1..=2).contains(&n)), "{seen:?}");
    assert_eq!(number(&server, "pool", "permits"), 2, "the total was set");
    assert_eq!(
        number(&server, "pool", "available"),
        2,
        "every permit came back"
    );
}

#[test]
fn an_existing_semaphore_keeps_its_total() {
    let server = Server::start();
    let _: i64 = server.cmd(&["SEM.PERMITS", "gpu", "1"]);
    let output = rlock(&server, &["run", "--permits", "3", "gpu", "--", "true"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let said = text(&output.stderr);
    assert!(said.contains("has 1 permits, not 3"), "{said}");
    assert_eq!(number(&server, "gpu", "permits"), 1, "the total stays");
}

#[test]
fn info_shows_the_total_and_the_holders() {
    let server = Server::start();
    let _: i64 = server.cmd(&["SEM.PERMITS", "gpu", "4"]);
    let _: i64 = server.cmd(&["SEM.ACQUIRE", "gpu", "train", "3"]);
    let output = rlock(&server, &["info", "--permits", "gpu"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let shown = text(&output.stdout);
    assert!(shown.contains("permits: 4"), "{shown}");
    assert!(shown.contains("available: 1"), "{shown}");
    assert!(shown.contains("holder: train (permits: 3"), "{shown}");
    let free = rlock(&server, &["info", "--permits", "none"])
        .output()
        .unwrap();
    assert_eq!(free.status.code(), Some(1), "{free:?}");
}

#[test]
fn a_permit_taken_away_stops_the_command() {
    let server = Server::start();
    let args = [
        "run",
        "--permits",
        "1",
        "--check",
        "200ms",
        "one",
        "--",
        "sleep",
        "30",
    ];
    let run = rlock(&server, &args).spawn().expect("spawn rlock");
    let held = support::poll(std::time::Duration::from_secs(10), || {
        number(&server, "one", "available") == 0
    });
    assert!(held, "the run never held its permit");
    let _: i64 = server.cmd(&["SEM.FORCERELEASE", "one"]);
    let output = run.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(76), "{output:?}");
}
