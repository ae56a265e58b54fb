//! `SEM.PERMITS key ADD n` (docs/commands/sem.permits.md): the total changed by `n` without
//! knowing it, as Redisson's `addPermits`; a raised total serves the queue, and a total out
//! of bounds is refused, nothing changed.

#[allow(dead_code)]
#[path = "semaphore/client.rs"]
mod client;
mod support;

use client::{granted, held, queued, sem_info, waiter};
use support::{expect_error, int, raw, Server};

#[test]
fn add_changes_the_total_by_its_permits_and_serves_the_queue() {
    let server = Server::start();
    let mut con = server.conn();
    // A missing semaphore is created with the permits added to 0.
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "ADD", "2"]), 2);
    int(&mut con, &["SEM.ACQUIRE", "s", "a", "2"]);
    let w = waiter(&server, "s", "w", 1);
    queued(&mut con, "s", 1);
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "add", "1"]), 3);
    granted(&w);
    assert_eq!(int(&mut con, &["SEM.PERMITS", "s", "ADD", "-3"]), 0);
    assert_eq!(held(&mut con, "s"), vec![("a".into(), 2), ("w".into(), 1)]);
    let bounds = "ERR the total of permits must be an integer from 0 to 2147483647 (after ADD)";
    expect_error(&mut con, &["SEM.PERMITS", "s", "ADD", "-1"], bounds);
    int(&mut con, &["SEM.PERMITS", "s", "2147483647"]);
    expect_error(&mut con, &["SEM.PERMITS", "s", "ADD", "1"], bounds);
    let change = "ERR the permits to add must be an integer from -2147483647 to 2147483647";
    expect_error(&mut con, &["SEM.PERMITS", "s", "ADD", "x"], change);
    expect_error(
        &mut con,
        &["SEM.PERMITS", "s", "PLUS", "1"],
        "ERR unknown option 'PLUS', expected ADD",
    );
    assert_eq!(
        sem_info(&mut con, "s").unwrap().total,
        2147483647,
        "changed by an error"
    );
    raw(&mut con, &["SET", "str", "x"]);
    let refused = raw(&mut con, &["SEM.PERMITS", "str", "ADD", "1"]);
    let text = support::error_text(&refused).unwrap_or_default();
    assert!(text.starts_with("WRONGTYPE"), "{text}");
}
