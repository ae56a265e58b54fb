//! A push receiver that left its channel with many tickets queued: the release that finds
//! them writes one holding for them all, not one each.

use crate::receiver::{queued_of, Queued, Receiver};
use crate::support::{error_text, int, raw, wait_until, Server};
use crate::{client_id, stat, wait};

const TICKETS: usize = 20_000;

#[test]
fn a_receiver_that_left_its_channel_costs_one_holding_for_all_its_tickets() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "holder"]);
    let mut deaf = Receiver::push(&server);
    for i in 0..TICKETS {
        deaf.send(&["LOCK.WAIT", "L", &format!("w{i}")]);
    }
    for _ in 0..TICKETS {
        assert!(matches!(queued_of(&deaf.reply()), Queued::Queued(_)));
    }
    deaf.send(&["UNSUBSCRIBE"]);
    deaf.frame();
    let me = client_id(&mut con).to_string();
    let last = wait(&mut con, "L", "after", &["TO", &me]);
    let revoked = stat(&mut con, "rlock_revoked_grants");
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "L", "holder"]), 0);
    // Its tickets are skipped a slice at a time, each pass short.
    let limit = std::time::Duration::from_secs(10);
    assert!(wait_until(limit, || stat(&mut con, "rlock_waiters") == 0));
    assert_eq!(stat(&mut con, "rlock_revoked_grants"), revoked + 1);
    let read = raw(&mut con, &["LOCK.GRANTS"]);
    let redis::Value::Array(items) = &read else {
        panic!("LOCK.GRANTS: {read:?}");
    };
    assert_eq!(items.first(), Some(&redis::Value::Int(last)), "{read:?}");
    // Its next push ticket finds it without a subscriber again.
    let refused = deaf.call(&["LOCK.WAIT", "L", "again"]);
    let text = error_text(&refused).unwrap_or_default();
    assert!(
        text.starts_with("ERR subscribe to __rlock__:"),
        "{refused:?}"
    );
}
