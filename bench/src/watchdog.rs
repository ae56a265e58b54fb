//! Scenario 4 (watchdog: one client renews every lock it holds, pipelined, one round trip
//! per round) and scenario 5 (server memory per held lock and per queued waiter).

use std::time::{Duration, Instant};

use redis::{ConnectionLike, Value};

use crate::clock::percentile;
use crate::redisson::{self, Latch};
use crate::server::{connect, info_num, Snapshot};
use crate::side::{self, channel, Scripts, Side, LEASE_MS};

/// One side's watchdog run.
#[derive(Debug, Clone)]
pub struct Renewals {
    pub locks: usize,
    pub rounds: usize,
    pub round_trips_per_round: usize,
    pub round_ms_p50: f64,
    pub server_cpu_ms_per_round: f64,
    pub server_us_per_renewal: f64,
    /// `used_memory` growth per held lock, bytes.
    pub bytes_per_lock: f64,
}

/// Takes `locks` locks with one client, then renews them all `rounds` times.
pub fn renewals(port: u16, scripts: &Scripts, side: Side, locks: usize, rounds: usize) -> Renewals {
    let mut con = connect(port).expect("watchdog connection");
    let _: () = redis::cmd("FLUSHALL").query(&mut con).expect("FLUSHALL");
    let owner = "watchdog:1";
    let keys: Vec<String> = (0..locks)
        .map(|i| format!("w:{}:{i}", side.name()))
        .collect();
    let memory_before = info_num(&mut con, "memory", "used_memory");
    let mut take = redis::pipe();
    for key in &keys {
        take.add_command(side.acquire(scripts, key, owner, LEASE_MS));
    }
    let taken: Vec<Value> = take.query(&mut con).expect("take the locks");
    assert!(
        taken.iter().all(|r| side.acquired(r)),
        "not every lock was taken"
    );
    let memory_after = info_num(&mut con, "memory", "used_memory");

    let mut renew = redis::pipe();
    for key in &keys {
        renew.add_command(side.renew(scripts, key, owner, LEASE_MS));
    }
    let packed = renew.get_packed_pipeline();
    let before = Snapshot::take(&mut con);
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let replies = con
            .req_packed_commands(&packed, 0, locks)
            .expect("renewal round");
        times.push(started.elapsed().as_secs_f64() * 1e3);
        assert!(
            replies.iter().all(|r| *r == Value::Int(1)),
            "a renewal failed"
        );
    }
    let delta = before.until(&Snapshot::take(&mut con));
    let _: () = redis::cmd("FLUSHALL").query(&mut con).expect("FLUSHALL");
    Renewals {
        locks,
        rounds,
        round_trips_per_round: 1,
        round_ms_p50: percentile(&times, 50.0),
        server_cpu_ms_per_round: 1e3 * delta.cpu_s / rounds as f64,
        server_us_per_renewal: delta.usec_of(side.top_level_commands()) as f64
            / (locks * rounds) as f64,
        bytes_per_lock: (memory_after - memory_before) / locks as f64,
    }
}

/// Server memory per queued waiter, bytes: (with the waiters' connections, of which the
/// waiting itself). rlock queues each waiter's connection on the server; a Redisson
/// process waits on its own threads behind one subscribed pub/sub connection.
pub fn waiter_memory(port: u16, scripts: &Scripts, side: Side, waiters: usize) -> (f64, f64) {
    let mut con = connect(port).expect("control connection");
    let key = format!("m:{}", side.name());
    let holder = side.acquire(scripts, &key, "holder:1", LEASE_MS);
    assert!(side.acquired(&con.req_command(&holder).expect("holder")));
    let settle = || std::thread::sleep(Duration::from_millis(100));
    settle();
    let m0 = info_num(&mut con, "memory", "used_memory");
    let per_waiter = match side {
        Side::Lua => {
            let latch = std::sync::Arc::new(Latch::default());
            let listener =
                redisson::listen(port, &channel(&key), latch.clone()).expect("SUBSCRIBE");
            settle();
            let m1 = info_num(&mut con, "memory", "used_memory");
            latch.close();
            let _ = listener.join();
            ((m1 - m0) / waiters as f64, 0.0)
        }
        _ => {
            let mut conns: Vec<_> = (0..waiters)
                .map(|_| connect(port).expect("waiter"))
                .collect();
            settle();
            let m1 = info_num(&mut con, "memory", "used_memory");
            for (i, c) in conns.iter_mut().enumerate() {
                let cmd = side::acquire_waiting(&key, &format!("w{i}:1"), LEASE_MS);
                c.send_packed_command(&cmd.get_packed_command())
                    .expect("send");
            }
            let queued = (0..500).any(|_| {
                settle();
                info_num(&mut con, "rlock", "rlock_waiters") as usize == waiters
            });
            assert!(queued, "the waiters were never all queued");
            let m2 = info_num(&mut con, "memory", "used_memory");
            drop(conns);
            let gone = (0..500).any(|_| {
                settle();
                info_num(&mut con, "rlock", "rlock_waiters") == 0.0
            });
            assert!(gone, "the waiters never left");
            ((m2 - m0) / waiters as f64, (m2 - m1) / waiters as f64)
        }
    };
    let _: () = redis::cmd("FLUSHALL").query(&mut con).expect("FLUSHALL");
    per_waiter
}
