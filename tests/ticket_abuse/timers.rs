//! No module timer outlives what it watches: a lock's lease check goes with its queue, a
//! `LOCK.GRANTS BLOCK` woken early takes its timer with it.

use std::time::Duration;

use redis::Value;

use crate::support::{info_field, int, wait_until, Server};
use crate::{client_id, holding_l, stat, wait, LIMIT};

const CYCLES: usize = 1_000;
/// The heartbeat, a lease check, and a few in flight.
const FEW: i64 = 5;

#[test]
fn a_queue_that_empties_and_refills_leaves_no_timer_behind() {
    let server = Server::start();
    let mut con = holding_l(&server);
    let me = client_id(&mut con).to_string();
    let idle = stat(&mut con, "rlock_timers");
    assert!((1..=FEW).contains(&idle), "timers at rest: {idle}");
    for i in 0..CYCLES {
        let id = wait(&mut con, "L", &format!("w{i}"), &["TO", &me]).to_string();
        assert_eq!(int(&mut con, &["LOCK.CANCEL", "L", &id]), 0);
    }
    let timers = stat(&mut con, "rlock_timers");
    assert!(
        timers <= FEW,
        "{timers} module timers after {CYCLES} cycles"
    );
}

#[test]
fn grants_woken_early_stops_its_block_timer() {
    let server = Server::start();
    let mut con = holding_l(&server);
    let mut receiver = server.conn();
    let to = client_id(&mut receiver).to_string();
    for i in 0..CYCLES / 5 {
        let mut pending = redis::cmd("LOCK.GRANTS");
        pending.arg("BLOCK").arg("600000");
        // The call blocks until the outcome of the ticket below comes.
        let reader = std::thread::spawn(move || {
            let reply: Value = pending.query(&mut receiver).expect("LOCK.GRANTS");
            (receiver, reply)
        });
        let blocked = wait_until(LIMIT, || {
            info_field(&mut con, "clients", "blocked_clients").as_deref() == Some("1")
        });
        assert!(blocked, "LOCK.GRANTS BLOCK did not block");
        wait(&mut con, "L", &format!("w{i}"), &["WAIT", "1", "TO", &to]);
        let (back, reply) = reader.join().expect("the reader");
        receiver = back;
        assert!(
            matches!(&reply, Value::Array(items) if items.len() == 2),
            "{reply:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(50));
    let timers = stat(&mut con, "rlock_timers");
    assert!(
        timers <= FEW,
        "{timers} module timers after {} wakes",
        CYCLES / 5
    );
}
