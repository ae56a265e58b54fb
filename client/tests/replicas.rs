//! `LockOptions::min_replicas`: a grant counts only once a replica has it, and a grant no
//! replica acknowledges is released and reported, with a real replica that is live or
//! stopped (SIGSTOP).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use rlock_client::{Error, LockOptions};
use support::{eventually, Server};

/// How long a grant waits for its replica's acknowledgement: a running replica gives it in
/// a few milliseconds, even on a loaded machine; a stopped one never does.
const ACK_WITHIN: Duration = Duration::from_secs(2);

/// A master and a replica of it, both with the module, the replica acknowledging writes.
///
/// "Linked" is not enough: after a diskless sync the master streams to a replica only from
/// its first `REPLCONF ACK`, up to a second later. And a probe write must follow the link:
/// before it, the master keeps no replication offset, and `WAIT` counts any replica.
fn master_and_replica() -> (Server, Server) {
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let port = master.port().to_string();
    let replica = Server::start_with(&["--replicaof", "127.0.0.1", &port]);
    let mut conn = master.conn();
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the replica never acknowledged a write:\n{}",
            replica.log()
        );
        let link: String = replica.cmd(&["INFO", "replication"]);
        let replicas: String = master.cmd(&["INFO", "replication"]);
        if !link.contains("master_link_status:up") || !replicas.contains("state=online") {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let _: () = redis::cmd("SET")
            .arg("probe")
            .arg(1)
            .query(&mut conn)
            .unwrap();
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(50).query(&mut conn).unwrap();
        if acked == 1 {
            return (master, replica);
        }
    }
}

/// A process stopped with SIGSTOP, continued when dropped.
struct Stopped(u32);

impl Stopped {
    fn stop(pid: u32) -> Stopped {
        signal("-STOP", pid);
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal("-CONT", self.0);
    }
}

fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid} failed");
}

fn confirmed() -> LockOptions {
    LockOptions::new().min_replicas(1, ACK_WITHIN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_is_returned_once_the_replica_has_it() {
    let (master, replica) = master_and_replica();
    let client = master.client().await;
    let guard = client
        .lock("job")
        .options(confirmed())
        .acquire()
        .await
        .unwrap();
    // No polling: acknowledged means the replica has applied it.
    let copy = replica.info("job").expect("the replica has the lock");
    assert_eq!(
        (copy.owner.as_str(), copy.token),
        (guard.owner(), guard.token())
    );

    // A handoff to a waiter is confirmed as well.
    let lock = client.lock("job").options(confirmed());
    let waiter = tokio::spawn(async move { lock.acquire().await });
    assert!(
        eventually(Duration::from_secs(10), || master
            .info("job")
            .unwrap()
            .waiters
            == 1)
        .await
    );
    guard.release().await.unwrap();
    let next = waiter.await.unwrap().unwrap();
    let copy = replica.info("job").expect("the replica has the handoff");
    assert_eq!(
        (copy.owner.as_str(), copy.token),
        (next.owner(), next.token())
    );
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_no_replica_acknowledges_is_released_and_reported() {
    let (master, replica) = master_and_replica();
    let client = master.client().await;
    let stopped = Stopped::stop(replica.pid());
    let err = client
        .lock("job")
        .options(confirmed())
        .acquire()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotReplicated { key, wanted: 1, acked: 0 } if key == "job"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "lock 'job' was granted but only 0 of 1 replicas acknowledged it in time; released it"
    );
    assert_eq!(master.info("job"), None, "the unconfirmed grant was kept");

    // Without the option the lock is granted as usual.
    let plain = client.lock("job").acquire().await.unwrap();
    plain.release().await.unwrap();
    drop(stopped);
    let guard = client.lock("job").options(confirmed()).acquire().await;
    guard
        .expect("confirmed again once the replica runs")
        .release()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_no_replica_acknowledges_is_released_and_reported() {
    let (master, replica) = master_and_replica();
    let holder = master.client().await;
    let held = holder.lock("job").acquire().await.unwrap();
    let _stopped = Stopped::stop(replica.pid());
    // A client of its own: its connection has written nothing before the handoff, so a
    // `WAIT` that did not cover the handoff would count the stopped replica.
    let client = master.client().await;
    let lock = client.lock("job").options(confirmed());
    let waiter = tokio::spawn(async move { lock.acquire().await });
    let queued = eventually(Duration::from_secs(10), || {
        master.info("job").is_some_and(|i| i.waiters == 1)
    });
    assert!(queued.await);
    held.release().await.unwrap();
    let err = waiter.await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::NotReplicated { acked: 0, .. }),
        "{err:?}"
    );
    assert_eq!(master.info("job"), None, "the unconfirmed handoff was kept");
}
