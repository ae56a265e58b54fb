//! Every command the client sends, built in one place: the `LOCK.*` and `RWLOCK.*` commands
//! of the module (a lock's own commands in the family of its [`Kind`]), and the few server commands around them (connection ids, replica acknowledgement,
//! module check, cluster and Sentinel discovery). Pure: no connections in here.
//!
//! Durations arrive as whole milliseconds, already rounded the way their callers need.

use redis::{cmd, Cmd};

use crate::pure::kind::Kind;

/// `LOCK.ACQUIRE key owner LEASE ms` (`RWLOCK.ACQUIRE key owner MODE ...`): one try.
pub(crate) fn acquire(kind: Kind, key: &str, owner: &str, lease_ms: u64) -> Cmd {
    let mut cmd = kind.command("ACQUIRE", key, owner);
    cmd.arg("LEASE").arg(lease_ms);
    cmd
}

/// `LOCK.ACQUIRE key owner LEASE ms WAIT ms`: queued on the server until the lock is handed
/// over or `wait_ms` runs out (0: no limit). It blocks the connection it runs on.
pub(crate) fn acquire_waiting(
    kind: Kind,
    key: &str,
    owner: &str,
    lease_ms: u64,
    wait_ms: u64,
) -> Cmd {
    let mut cmd = match kind {
        Kind::Latch => kind.command("AWAIT", key, owner), // `LATCH.AWAIT key`: 1, or 0
        _ => acquire(kind, key, owner, lease_ms),
    };
    cmd.arg("WAIT").arg(wait_ms);
    cmd
}

/// `LOCK.WAIT key owner LEASE ms WAIT ms`: acquires at once (`held <token>`) or queues a
/// ticket (`queued <wait id>`) whose outcome comes as a message to the calling connection
/// (`wait_ms` 0: no limit). `RWLOCK.WAIT key owner MODE ...` answers the same way.
pub(crate) fn wait_ticket(kind: Kind, key: &str, owner: &str, lease_ms: u64, wait_ms: u64) -> Cmd {
    let mut cmd = kind.command("WAIT", key, owner);
    if kind != Kind::Latch {
        cmd.arg("LEASE").arg(lease_ms);
    }
    cmd.arg("WAIT").arg(wait_ms);
    cmd
}

/// `LOCK.CANCEL key wait-id`: ends a queued ticket (0), answers an undelivered grant's
/// token, or nil when the outcome went out already.
pub(crate) fn cancel(key: &str, wait_id: u64) -> Cmd {
    let mut cmd = cmd("LOCK.CANCEL");
    cmd.arg(key).arg(wait_id);
    cmd
}

/// `LOCK.GRANTS BLOCK ms`: the outcomes mailed to this connection, waiting up to `ms` for one.
pub(crate) fn grants(block_ms: u64) -> Cmd {
    let mut cmd = cmd("LOCK.GRANTS");
    cmd.arg("BLOCK").arg(block_ms);
    cmd
}

/// `LOCK.RELEASE key owner TOKEN t` (`RWLOCK.RELEASE key owner MODE TOKEN t`, a hold of that
/// mode): acts only on the holding with token `t`, not on a newer one of the same owner.
pub(crate) fn release(kind: Kind, key: &str, owner: &str, token: u64) -> Cmd {
    let mut cmd = kind.command("RELEASE", key, owner);
    cmd.arg("TOKEN").arg(token);
    cmd
}

/// `LOCK.RENEW key owner LEASE ms TOKEN t`: renews only the holding with token `t`.
/// (`RWLOCK.RENEW`, the same arguments, renews the owner's read and write holds at once.)
pub(crate) fn renew(kind: Kind, key: &str, owner: &str, lease_ms: u64, token: u64) -> Cmd {
    let mut cmd = kind.family("RENEW");
    cmd.arg(key).arg(owner).arg("LEASE").arg(lease_ms);
    cmd.arg("TOKEN").arg(token);
    cmd
}

/// `LOCK.FENCED key owner token <inner>`: runs `inner` only while the holding `(owner,
/// token)` is the lock's current one.
pub(crate) fn fenced(key: &str, owner: &str, token: u64, inner: &Cmd) -> Cmd {
    let mut cmd = cmd("LOCK.FENCED");
    cmd.arg(key).arg(owner).arg(token);
    for arg in inner.args_iter() {
        if let redis::Arg::Simple(bytes) = arg {
            cmd.arg(bytes);
        }
    }
    cmd
}

/// `LOCK.RAISE key owner token floor`: the holder raises the node's token counter.
pub(crate) fn raise(key: &str, owner: &str, token: u64, floor: u64) -> Cmd {
    let mut cmd = cmd("LOCK.RAISE");
    cmd.arg(key).arg(owner).arg(token).arg(floor);
    cmd
}

/// `LOCK.INFO key` (`RWLOCK.INFO key` for a read-write lock).
pub(crate) fn info(kind: Kind, key: &str) -> Cmd {
    let mut cmd = kind.family("INFO");
    cmd.arg(key);
    cmd
}

/// `LOCK.FORCERELEASE key` (`RWLOCK.FORCERELEASE key` for a read-write lock).
pub(crate) fn force_release(kind: Kind, key: &str) -> Cmd {
    let mut cmd = kind.family("FORCERELEASE");
    cmd.arg(key);
    cmd
}

/// `CLIENT ID`: the connection's id on its server, for a later `CLIENT KILL ID`.
pub(crate) fn client_id() -> Cmd {
    let mut cmd = cmd("CLIENT");
    cmd.arg("ID");
    cmd
}

/// `CLIENT KILL ID id`: closes that connection on the server that numbered it.
pub(crate) fn client_kill_id(id: i64) -> Cmd {
    let mut cmd = cmd("CLIENT");
    cmd.arg("KILL").arg("ID").arg(id);
    cmd
}

/// `CLIENT INFO`: the connection as its server sees it (`addr=ip:port ...`).
pub(crate) fn client_info() -> Cmd {
    let mut cmd = cmd("CLIENT");
    cmd.arg("INFO");
    cmd
}

/// `CLIENT KILL ID id ADDR addr`: closes that connection only if it still has that address,
/// so that an id a restarted server gave to another connection is not killed.
pub(crate) fn client_kill_id_at(id: i64, addr: &str) -> Cmd {
    let mut cmd = client_kill_id(id);
    cmd.arg("ADDR").arg(addr);
    cmd
}

/// `WAIT replicas ms`: how many replicas have the connection's last write.
pub(crate) fn wait_replicas(replicas: usize, timeout_ms: u64) -> Cmd {
    let mut cmd = cmd("WAIT");
    cmd.arg(replicas).arg(timeout_ms);
    cmd
}

/// `COMMAND INFO LOCK.ACQUIRE`: whether the server has the module.
pub(crate) fn module_probe() -> Cmd {
    let mut cmd = cmd("COMMAND");
    cmd.arg("INFO").arg("LOCK.ACQUIRE");
    cmd
}

/// `INFO cluster`: whether the server is a cluster node.
pub(crate) fn info_cluster() -> Cmd {
    let mut cmd = cmd("INFO");
    cmd.arg("cluster");
    cmd
}

/// `CLUSTER SLOTS`: which node serves which slots.
pub(crate) fn cluster_slots() -> Cmd {
    let mut cmd = cmd("CLUSTER");
    cmd.arg("SLOTS");
    cmd
}

/// `PING`: whether a server answers at all (the liveness probe of a long wait).
pub(crate) fn ping() -> Cmd {
    cmd("PING")
}

/// `LOCK.LISTEN prefix`: announce to this connection the holdings of owners of `prefix`.
pub(crate) fn listen(prefix: &str) -> Cmd {
    let mut cmd = cmd("LOCK.LISTEN");
    cmd.arg(prefix);
    cmd
}

/// `ASKING`: the next command on the connection may touch a slot being migrated here.
pub(crate) fn asking() -> Cmd {
    cmd("ASKING")
}

/// `SENTINEL get-master-addr-by-name name`: where a sentinel says the master is.
pub(crate) fn sentinel_master_addr(name: &str) -> Cmd {
    let mut cmd = cmd("SENTINEL");
    cmd.arg("get-master-addr-by-name").arg(name);
    cmd
}

/// `ROLE`: whether the server is a master or a replica.
pub(crate) fn role() -> Cmd {
    cmd("ROLE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Arg;

    fn words(cmd: &Cmd) -> Vec<String> {
        cmd.args_iter()
            .map(|arg| match arg {
                Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => "<not a plain argument>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn lock_commands_put_the_key_first() {
        assert_eq!(
            words(&acquire(Kind::Lock, "k", "o", 30_000)),
            ["LOCK.ACQUIRE", "k", "o", "LEASE", "30000"]
        );
        assert_eq!(
            words(&acquire_waiting(Kind::Lock, "k", "o", 300, 0)),
            ["LOCK.ACQUIRE", "k", "o", "LEASE", "300", "WAIT", "0"]
        );
        assert_eq!(
            words(&release(Kind::Lock, "k", "o", 9)),
            ["LOCK.RELEASE", "k", "o", "TOKEN", "9"]
        );
        assert_eq!(
            words(&renew(Kind::Lock, "k", "o", 2, 9)),
            ["LOCK.RENEW", "k", "o", "LEASE", "2", "TOKEN", "9"]
        );
        assert_eq!(
            words(&wait_ticket(Kind::Lock, "k", "o", 300, 0)),
            ["LOCK.WAIT", "k", "o", "LEASE", "300", "WAIT", "0"]
        );
        assert_eq!(words(&cancel("k", 7)), ["LOCK.CANCEL", "k", "7"]);
        assert_eq!(words(&grants(5)), ["LOCK.GRANTS", "BLOCK", "5"]);
        assert_eq!(words(&info(Kind::Lock, "k")), ["LOCK.INFO", "k"]);
        assert_eq!(
            words(&force_release(Kind::Lock, "k")),
            ["LOCK.FORCERELEASE", "k"]
        );
    }

    #[test]
    fn read_write_commands_carry_their_mode_third() {
        let (r, w) = (Kind::Read, Kind::Write);
        assert_eq!(
            words(&acquire(r, "k", "o", 300)),
            ["RWLOCK.ACQUIRE", "k", "o", "READ", "LEASE", "300"]
        );
        assert_eq!(
            words(&acquire_waiting(w, "k", "o", 300, 5)),
            [
                "RWLOCK.ACQUIRE",
                "k",
                "o",
                "WRITE",
                "LEASE",
                "300",
                "WAIT",
                "5"
            ]
        );
        assert_eq!(
            words(&wait_ticket(r, "k", "o", 300, 0)),
            ["RWLOCK.WAIT", "k", "o", "READ", "LEASE", "300", "WAIT", "0"]
        );
        assert_eq!(
            words(&release(w, "k", "o", 9)),
            ["RWLOCK.RELEASE", "k", "o", "WRITE", "TOKEN", "9"]
        );
        assert_eq!(
            words(&renew(r, "k", "o", 2, 9)),
            ["RWLOCK.RENEW", "k", "o", "LEASE", "2", "TOKEN", "9"]
        );
        assert_eq!(words(&info(w, "k")), ["RWLOCK.INFO", "k"]);
        assert_eq!(words(&force_release(r, "k")), ["RWLOCK.FORCERELEASE", "k"]);
    }

    #[test]
    fn fenced_wraps_the_whole_inner_command() {
        let mut inner = redis::cmd("HSET");
        inner.arg("d").arg("f").arg(b"\xff");
        let wrapped = fenced("k", "o", 9, &inner);
        assert_eq!(
            words(&wrapped),
            ["LOCK.FENCED", "k", "o", "9", "HSET", "d", "f", "\u{fffd}"]
        );
    }

    #[test]
    fn server_commands_are_spelled_as_the_server_takes_them() {
        assert_eq!(words(&client_id()), ["CLIENT", "ID"]);
        assert_eq!(words(&client_kill_id(42)), ["CLIENT", "KILL", "ID", "42"]);
        assert_eq!(words(&client_info()), ["CLIENT", "INFO"]);
        assert_eq!(
            words(&client_kill_id_at(42, "127.0.0.1:5000")),
            ["CLIENT", "KILL", "ID", "42", "ADDR", "127.0.0.1:5000"]
        );
        assert_eq!(words(&wait_replicas(2, 100)), ["WAIT", "2", "100"]);
        assert_eq!(words(&module_probe()), ["COMMAND", "INFO", "LOCK.ACQUIRE"]);
        assert_eq!(words(&info_cluster()), ["INFO", "cluster"]);
        assert_eq!(words(&cluster_slots()), ["CLUSTER", "SLOTS"]);
        assert_eq!(words(&asking()), ["ASKING"]);
        assert_eq!(
            words(&sentinel_master_addr("m")),
            ["SENTINEL", "get-master-addr-by-name", "m"]
        );
        assert_eq!(words(&role()), ["ROLE"]);
        assert_eq!(words(&ping()), ["PING"]);
    }
}
