//! What names a server in the canonical order of a [`MultiLock`](crate::MultiLock) and a
//! [`RedLock`](crate::RedLock): what the server reports, not how the URL spells it, so that
//! `127.0.0.1`, `127.1` and `localhost` name one server once.
//!
//! - A server: its `run_id` (`INFO server`), a random id it draws at start.
//! - A Redis Cluster: the smallest node id in `CLUSTER NODES`, the same whichever node the
//!   client was opened on (while that node stays in the cluster).
//! - A master followed through Sentinel: none here (the master changes with a failover);
//!   the client names it by its sentinels and master name.
//!
//! A `run_id` is drawn again when the server restarts: clients opened before and after a
//! restart name it differently (and may order it differently against the others) until
//! they are opened again. Two MultiLocks that order shared members differently can wait on
//! each other, up to their wait limits (for ever without one): reopen clients after a
//! server restarts.

use redis::aio::ConnectionManager;
use redis::RedisResult;

/// The identity of the server (or cluster) `conn` reaches; `None` if it does not say
/// (`INFO` refused by an ACL: the client then names it by its address).
pub(crate) async fn learn(conn: &mut ConnectionManager) -> Option<String> {
    match ask(conn).await {
        Ok(identity) => identity,
        Err(err) => {
            tracing::debug!(%err, "the server's identity is unknown; naming it by its address");
            None
        }
    }
}

async fn ask(conn: &mut ConnectionManager) -> RedisResult<Option<String>> {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .arg("cluster")
        .query_async(conn)
        .await?;
    if field(&info, "cluster_enabled") == Some("1") {
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await?;
        if let Some(id) = smallest_node_id(&nodes) {
            return Ok(Some(format!("cluster {id}")));
        }
    }
    Ok(field(&info, "run_id").map(|id| format!("run_id {id}")))
}

/// The value of `name` in an `INFO` reply.
fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .filter_map(|line| line.trim_end().split_once(':'))
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// The smallest node id of a `CLUSTER NODES` reply.
fn smallest_node_id(nodes: &str) -> Option<&str> {
    nodes
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter(|id| !id.is_empty())
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_is_read_from_info() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:ab12\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n";
        assert_eq!(field(info, "run_id"), Some("ab12"));
        assert_eq!(field(info, "cluster_enabled"), Some("0"));
        assert_eq!(field(info, "missing"), None);
    }

    #[test]
    fn a_cluster_is_named_by_its_smallest_node_id() {
        let nodes = "f2 127.0.0.1:7001@17001 master - 0 0 1 connected 0-8000\n\
                     a9 127.0.0.1:7002@17002 myself,master - 0 0 2 connected 8001-16383\n";
        assert_eq!(smallest_node_id(nodes), Some("a9"));
        assert_eq!(smallest_node_id(""), None);
    }
}
