//! Seeded races between the ends of a ticket: each wait ends exactly once, and no holding
//! is ever left that its receiver does not know of.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;

use crate::receiver::{Queued, Receiver};
use crate::support::{int, raw, Server};
use crate::{holder, waiters};

/// A small deterministic generator (xorshift), so a failing round can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Busy-waits `n` turns: a delay of a few µs up to a few hundred, finer than a sleep.
fn spin(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

/// Runs `act` while another connection releases `holder`'s lock on `k`, each after a random
/// spin from one start, so that either may reach the server first.
fn crossing_a_release<T>(
    server: &Server,
    holder: String,
    rng: &mut Rng,
    act: impl FnOnce() -> T,
) -> T {
    let (release_spin, act_spin) = (rng.below(20_000), rng.below(20_000));
    let mut con = server.conn();
    let go = Arc::new(Barrier::new(2));
    let releaser = {
        let go = Arc::clone(&go);
        thread::spawn(move || {
            go.wait();
            spin(release_spin);
            redis::cmd("LOCK.RELEASE")
                .arg("k")
                .arg(holder)
                .query::<i64>(&mut con)
        })
    };
    go.wait();
    spin(act_spin);
    let acted = act();
    releaser.join().expect("releaser").expect("release");
    acted
}

#[test]
fn a_cancel_racing_a_grant_ends_each_ticket_once() {
    let server = Server::start();
    let mut con = server.conn();
    let mut r = Receiver::push(&server);
    let mut rng = Rng(0x5eed_0001);
    let (mut granted, mut cancelled) = (0, 0);
    for round in 0..300 {
        let holder_name = format!("h{round}");
        int(&mut con, &["LOCK.ACQUIRE", "k", &holder_name]);
        let owner = format!("t{round}");
        let Queued::Queued(id) = r.wait("k", &owner, &[]) else {
            panic!("round {round}: queued behind the holder");
        };
        // The release and the cancel cross: either may come first.
        let answer = crossing_a_release(&server, holder_name, &mut rng, || {
            r.call(&["LOCK.CANCEL", "k", &id.to_string()])
        });
        match answer {
            redis::Value::Int(0) => {
                cancelled += 1;
                assert!(
                    r.no_outcome_yet(),
                    "round {round}: a cancelled ticket got an outcome"
                );
                assert_eq!(holder(&mut con, "k"), None, "round {round}");
            }
            redis::Value::Nil => {
                granted += 1;
                let (wait, outcome) = r.outcome();
                assert_eq!(wait, id, "round {round}");
                let token: i64 = outcome.parse().expect("a token");
                assert_eq!(
                    holder(&mut con, "k"),
                    Some((owner.clone(), token)),
                    "round {round}"
                );
                assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", &owner]), 0);
            }
            other => panic!("round {round}: LOCK.CANCEL answered {other:?}"),
        }
        assert_eq!(waiters(&mut con, "k"), 0, "round {round}");
    }
    assert!(
        granted > 0 && cancelled > 0,
        "one side never won: {granted} granted, {cancelled} cancelled"
    );
}

#[test]
fn a_receiver_closing_as_its_grant_is_mailed_leaves_no_holding() {
    let server = Server::start();
    let mut con = server.conn();
    let mut rng = Rng(0x5eed_0002);
    for round in 0..100 {
        let holder_name = format!("h{round}");
        int(&mut con, &["LOCK.ACQUIRE", "k", &holder_name]);
        let mailbox = Receiver::resp2(&server);
        let to = mailbox.id.to_string();
        let owner = format!("t{round}");
        // Nobody reads the mailbox: a grant mailed there is never delivered.
        raw(
            &mut con,
            &["LOCK.WAIT", "k", &owner, "LEASE", "60000", "TO", &to],
        );
        crossing_a_release(&server, holder_name, &mut rng, || drop(mailbox));
        // Dropped from the queue (closed first) or mailed and taken back (released first):
        // either way the lock is free long before the grant's lease.
        let freed = crate::support::wait_until(crate::LIMIT, || holder(&mut con, "k").is_none());
        assert!(
            freed,
            "round {round}: {:?} still holds",
            holder(&mut con, "k")
        );
    }
}

#[test]
fn a_wait_running_out_as_the_lock_is_released_ends_once() {
    let server = Server::start();
    let mut con = server.conn();
    let mut r = Receiver::push(&server);
    let mut rng = Rng(0x5eed_0003);
    let (mut granted, mut timed_out) = (0, 0);
    for round in 0..100 {
        let holder_name = format!("h{round}");
        int(&mut con, &["LOCK.ACQUIRE", "k", &holder_name]);
        let owner = format!("t{round}");
        let Queued::Queued(id) = r.wait("k", &owner, &["WAIT", "20"]) else {
            panic!("round {round}: queued behind the holder");
        };
        thread::sleep(std::time::Duration::from_micros(15_000 + rng.below(10_000)));
        int(&mut con, &["LOCK.RELEASE", "k", &holder_name]);
        let (wait, outcome) = r.outcome();
        assert_eq!(wait, id, "round {round}");
        if outcome == "0" {
            timed_out += 1;
            assert_eq!(holder(&mut con, "k"), None, "round {round}");
        } else {
            granted += 1;
            let token: i64 = outcome.parse().expect("a token");
            assert_eq!(
                holder(&mut con, "k"),
                Some((owner.clone(), token)),
                "round {round}"
            );
            assert_eq!(int(&mut con, &["LOCK.RELEASE", "k", &owner]), 0);
        }
        assert!(r.no_outcome_yet(), "round {round}: a second outcome");
        assert_eq!(waiters(&mut con, "k"), 0, "round {round}");
    }
    assert!(
        granted > 0 && timed_out > 0,
        "{granted} granted, {timed_out} timed out"
    );
}
