//! The server announces every end of a holding that its holder did not ask for, and the
//! client's `lost()` resolves at once with the cause: for a plain lock, a read hold, a write
//! hold and a semaphore's permits, held with the default lease (the next renewal is 10 s
//! away, so no renewal can explain it).

mod support;

use std::time::Duration;

use rlock_client::{Client, EndCause, Error, Guard, LossReason, Owner};
use support::Server;

/// A hang limit: the announcement comes at once, the next renewal 10 s later.
const AT_ONCE: Duration = Duration::from_millis(50);

/// What a test holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    Lock,
    Read,
    Write,
    Permits,
}

const ALL: [Held; 4] = [Held::Lock, Held::Read, Held::Write, Held::Permits];

impl Held {
    /// The family of its commands.
    fn family(self) -> &'static str {
        match self {
            Held::Lock => "LOCK",
            Held::Read | Held::Write => "RWLOCK",
            Held::Permits => "SEM",
        }
    }

    /// One more hold of `key` by `owner`.
    async fn take(self, owner: &Owner, key: &str) -> Guard {
        let taken = match self {
            Held::Lock => owner.lock(key).acquire().await,
            Held::Read => owner.rw_lock(key).read().acquire().await,
            Held::Write => owner.rw_lock(key).write().acquire().await,
            Held::Permits => owner.semaphore(key).acquire(1).await,
        };
        taken.unwrap_or_else(|err| panic!("{self:?} of {key}: {err}"))
    }
}

/// A key of its own for `held` in a test of `cause` (with a space: the announcement
/// carries the key's length).
async fn key_for(client: &Client, held: Held, cause: EndCause) -> String {
    let key = format!("{held:?} {cause:?}").to_lowercase();
    if held == Held::Permits {
        client
            .semaphore(&key)
            .set_permits(3)
            .await
            .expect("SEM.SET");
    }
    key
}

/// Resolves `guard`'s loss within [`AT_ONCE`]; the reason.
async fn lost_at_once(guard: &Guard, what: &str) -> LossReason {
    let lost = tokio::time::timeout(AT_ONCE, guard.lost()).await;
    lost.unwrap_or_else(|_| panic!("{what}: lost() did not resolve at once: no announcement"))
}

/// For each kind: holds a key, has `end` end the holding on the server, and checks that the
/// loss is seen at once, with `cause`.
async fn each_kind(server: &Server, cause: EndCause, end: impl Fn(&Server, Held, &str)) {
    let client = server.client().await;
    for held in ALL {
        let key = key_for(&client, held, cause).await;
        let guard = held.take(&client.owner(), &key).await;
        end(server, held, &key);
        let reason = lost_at_once(&guard, &format!("{held:?}")).await;
        assert_eq!(reason, LossReason::Ended(cause), "{held:?}");
        assert!(matches!(guard.release().await, Err(Error::Lost { .. })));
    }
}

/// `cmd` on `server`, its reply ignored.
fn run(server: &Server, args: &[&str]) {
    let _: redis::Value = server.cmd(args);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_release_is_seen_at_once() {
    let server = Server::start();
    each_kind(&server, EndCause::ForceReleased, |s, held, key| {
        run(s, &[&format!("{}.FORCERELEASE", held.family()), key]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_del_or_unlink_is_seen_at_once() {
    let server = Server::start();
    each_kind(&server, EndCause::Deleted, |s, _, key| {
        run(s, &["DEL", key])
    })
    .await;
    run(&server, &["FLUSHDB"]);
    each_kind(&server, EndCause::Deleted, |s, _, key| {
        run(s, &["UNLINK", key])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_or_move_away_is_seen_at_once() {
    let server = Server::start();
    each_kind(&server, EndCause::Renamed, |s, _, key| {
        run(s, &["RENAME", key, &format!("{key}:elsewhere")]);
    })
    .await;
    each_kind(&server, EndCause::Moved, |s, _, key| {
        run(s, &["MOVE", key, "1"])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_written_over_the_key_is_seen_at_once() {
    let server = Server::start();
    each_kind(&server, EndCause::Overwritten, |s, _, key| {
        run(s, &["SET", key, "something else"]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_or_swap_of_the_database_is_seen_at_once() {
    let server = Server::start();
    each_kind(&server, EndCause::Flushed, |s, _, _| run(s, &["FLUSHDB"])).await;
    each_kind(&server, EndCause::Flushed, |s, _, _| run(s, &["FLUSHALL"])).await;
    each_kind(&server, EndCause::Swapped, |s, _, _| {
        run(s, &["SWAPDB", "0", "1"])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_is_seen_at_once() {
    let server = Server::start_with(&["--maxmemory-policy", "allkeys-random"]);
    each_kind(&server, EndCause::Evicted, |s, _, key| {
        let info: String = s.cmd(&["INFO", "memory"]);
        let used = info.lines().find_map(|l| l.strip_prefix("used_memory:"));
        let used: u64 = used
            .and_then(|u| u.trim().parse().ok())
            .expect("used_memory");
        run(
            s,
            &[
                "CONFIG",
                "SET",
                "maxmemory",
                &(used + 512 * 1024).to_string(),
            ],
        );
        let filler = "x".repeat(4096);
        let mut n = 0;
        while s.cmd::<i64>(&["EXISTS", key]) == 1 {
            assert!(n < 100_000, "{key} was never evicted");
            run(s, &["SET", &format!("filler:{n}"), &filler]);
            n += 1;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_ends_on_the_server_is_seen_at_once() {
    let server = Server::start();
    let client = server.client().await;
    for held in ALL {
        let key = key_for(&client, held, EndCause::Expired).await;
        let guard = held.take(&client.owner(), &key).await;
        // The server's lease is cut short (the client's own deadline stays 30 s away), and
        // another owner waits for it: the server hands it on when the lease ends.
        let (owner, token) = (guard.owner().to_owned(), guard.token().to_string());
        let renew = format!("{}.RENEW", held.family());
        run(
            &server,
            &[&renew, &key, &owner, "LEASE", "20", "TOKEN", &token],
        );
        let acquire = format!("{}.ACQUIRE", held.family());
        let mut waiter = vec![acquire.as_str(), &key, "other:2"];
        waiter.extend_from_slice(match held {
            Held::Lock => &[][..],
            Held::Read | Held::Write => &["WRITE"],
            Held::Permits => &["3"],
        });
        waiter.extend_from_slice(&["WAIT", "5000"]);
        tokio::task::block_in_place(|| run(&server, &waiter));
        let reason = lost_at_once(&guard, &format!("{held:?}")).await;
        assert_eq!(reason, LossReason::Ended(EndCause::Expired), "{held:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_that_takes_a_reentry_away_is_seen_at_once() {
    let server = Server::start();
    let client = server.client().await;
    for held in ALL {
        let key = key_for(&client, held, EndCause::Restored).await;
        let owner = client.owner();
        let first = held.take(&owner, &key).await;
        let mut conn = server.conn();
        let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut conn).expect("DUMP");
        let second = held.take(&owner, &key).await;
        assert_eq!(first.token(), second.token(), "{held:?}: a reentry");
        let mut restore = redis::cmd("RESTORE");
        restore.arg(&key).arg(0).arg(dump).arg("REPLACE");
        let () = restore.query(&mut conn).expect("RESTORE");
        for guard in [&first, &second] {
            let reason = lost_at_once(guard, &format!("{held:?}")).await;
            assert_eq!(reason, LossReason::Ended(EndCause::Restored), "{held:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_loss_cancels_with_lock_and_fails_fenced_writes() {
    let server = Server::start();
    let client = server.client().await;
    let lock = client.lock("work");
    let guard = lock.acquire().await.expect("acquire");
    run(&server, &["LOCK.FORCERELEASE", "work"]);
    lost_at_once(&guard, "the guard").await;
    let mut set = redis::cmd("SET");
    set.arg("data").arg("late");
    let fenced = guard.fenced::<()>(&set).await;
    assert!(matches!(fenced, Err(Error::Lost { .. })), "{fenced:?}");
    drop(guard.release().await);

    let forcing = {
        let url = server.url();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut conn = redis::Client::open(url)
                .expect("url")
                .get_multiplexed_async_connection()
                .await
                .expect("connect");
            let _: i64 = redis::cmd("LOCK.FORCERELEASE")
                .arg("work")
                .query_async(&mut conn)
                .await
                .expect("force");
        }
    };
    let work = lock.with_lock(|_| tokio::time::sleep(Duration::from_secs(30)));
    let (done, ()) = tokio::join!(tokio::time::timeout(Duration::from_secs(5), work), forcing);
    let done = done.expect("with_lock went on working after the announced loss");
    let reason = LossReason::Ended(EndCause::ForceReleased);
    assert!(
        matches!(done, Err(Error::Lost { reason: r, .. }) if r == reason),
        "{done:?}"
    );
}
