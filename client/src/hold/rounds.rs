//! The round trips of one watchdog round: one pipeline of `LOCK.RENEW` (and `RWLOCK.RENEW`)
//! per node.
//!
//! In a Redis Cluster the renewals are grouped by the node that serves each key's slot (as
//! the client knows it), and the nodes' pipelines run at the same time, each one round trip
//! on that node's shared connection. A renewal that a node redirects (its slot moved, or is
//! moving) is then sent again on its own, following the redirection like any command; that
//! teaches the slot map, so the next round groups it right. (A pipeline is not simply sent
//! to a redirection's target: the others in it belong where they were.)

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use redis::RedisResult;
use tokio::task::JoinSet;
use tokio::time::error::Elapsed;
use tokio::time::timeout;

use crate::hold::registry::Renewal;
use crate::net::listener::Listeners;
use crate::net::node::Node;
use crate::net::router::Router;
use crate::pure::commands;
use crate::pure::options::ceil_ms;

/// The answers of a round, in the order of its renewals.
pub(crate) struct Answers {
    /// `None` where the node's pipeline failed or timed out.
    pub(crate) replies: Vec<Option<RedisResult<i64>>>,
    pub(crate) round_trips: u64,
    /// Whether a pipeline (or a re-sent renewal) failed or timed out.
    pub(crate) failed: bool,
}

/// The replies of one pipeline of renewals.
type Piped = Vec<RedisResult<i64>>;

/// Sends `due` as one pipeline per node, all at once, each given `period` to answer; then
/// sends the redirected ones again, each on its own. A node without a listening connection
/// gets one first (`listener.rs`), so that the server tracks what it renews.
pub(crate) async fn send(
    router: &Arc<Router>,
    listeners: &Arc<Listeners>,
    due: &[Renewal],
    period: Duration,
) -> Answers {
    let by_node = by_node(router, due);
    let mut answers = Answers {
        replies: due.iter().map(|_| None).collect(),
        round_trips: by_node.len() as u64,
        failed: false,
    };
    let mut pipelines = JoinSet::new();
    for (node, indices) in by_node.into_values() {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in &indices {
            pipe.add_command(renew_command(&due[i]));
        }
        let (router, listeners) = (router.clone(), listeners.clone());
        pipelines.spawn(async move {
            listeners.ensure(&node).await;
            // Renewals may run twice: sent again once if the connection was dropped.
            let replies = timeout(period, node.pipeline::<Piped>(&pipe));
            let replies = replies.await;
            if let Ok(Err(err)) = &replies {
                // After a failover, the next round goes to the new node; finding it does
                // not hold up this round.
                let (router, node, err) = (router.clone(), node.clone(), err.clone());
                tokio::spawn(async move { router.failed(&node, &err).await });
            }
            (replies, node, indices)
        });
    }
    while let Some(joined) = pipelines.join_next().await {
        match joined {
            Ok((replies, node, indices)) => answers.record(replies, &node, indices),
            Err(_) => answers.failed = true,
        }
    }
    resend_redirected(router, due, period, &mut answers).await;
    answers
}

impl Answers {
    /// Records the replies of one node's pipeline to the renewals at `indices`, or its failure.
    fn record(
        &mut self,
        replies: Result<RedisResult<Piped>, Elapsed>,
        node: &Node,
        indices: Vec<usize>,
    ) {
        let why = match replies {
            Ok(Ok(replies)) => {
                for (i, reply) in indices.into_iter().zip(replies) {
                    self.replies[i] = Some(reply);
                }
                return;
            }
            Ok(Err(err)) => err.to_string(),
            Err(_) => "no answer within the renewal period".to_owned(),
        };
        self.failed = true;
        let locks = indices.len();
        tracing::warn!(node = %node.addr, locks, why, "lock renewal round failed; retrying");
    }
}

/// The indices of `due`, grouped by the node that serves each key.
fn by_node(router: &Router, due: &[Renewal]) -> HashMap<Arc<str>, (Arc<Node>, Vec<usize>)> {
    let mut by_node: HashMap<_, (_, Vec<_>)> = HashMap::new();
    for (i, r) in due.iter().enumerate() {
        let node = router.node_for(&r.holding.key);
        let group = by_node.entry(node.addr.clone());
        group.or_insert_with(|| (node, Vec::new())).1.push(i);
    }
    by_node
}

/// Sends again, each on its own and all at once, the renewals whose node redirected them.
async fn resend_redirected(
    router: &Arc<Router>,
    due: &[Renewal],
    period: Duration,
    answers: &mut Answers,
) {
    let mut resends = JoinSet::new();
    for (i, reply) in answers.replies.iter().enumerate() {
        if !matches!(reply, Some(Err(err)) if err.redirect_node().is_some()) {
            continue;
        }
        let (router, key, cmd) = (
            router.clone(),
            due[i].holding.key.clone(),
            renew_command(&due[i]),
        );
        resends.spawn(async move { (i, timeout(period, router.query(&key, &cmd)).await) });
    }
    answers.round_trips += resends.len() as u64;
    while let Some(joined) = resends.join_next().await {
        let Ok((i, reply)) = joined else {
            answers.failed = true;
            continue;
        };
        answers.failed |= reply.is_err();
        answers.replies[i] = reply.ok();
    }
}

/// `LOCK.RENEW key owner LEASE ms TOKEN t` for one renewal (`RWLOCK.RENEW ...` for the
/// holding of a read-write lock, in the same pipeline).
fn renew_command(r: &Renewal) -> redis::Cmd {
    let h = &r.holding;
    commands::renew(h.kind, &h.key, &h.owner, ceil_ms(r.lease), h.token)
}
