//! What the listening connections hear (`net/listener.rs`), applied to the holdings: one
//! task per client.
//!
//! - An announcement marks lost the holding it names, if the client holds it: same key,
//!   owner and token, and the same family (a plain lock, a read-write lock, a semaphore).
//!   One that names a holding the client no longer has (released, or a new token since) is
//!   ignored, and so is a repeat (in a Redis Cluster every node carries each message).
//!   Where the router follows failovers (a Redis Cluster, Sentinel), a key announced
//!   deleted or flushed is looked up first on the node that serves it now: a slot migration
//!   deletes the key on its old node (`MIGRATE`), and a demoted master empties its data to
//!   copy its new master's, while the holding lives on where the key went. A holding found
//!   there is kept; one not found (or a lookup that fails) is lost with the announced cause.
//! - A connection registered again renews every holding at once, so that the server tracks
//!   them again.
//! - A broken connection has the router ask again where things are (a failover), then
//!   renews every holding at once, and again with a growing pause (up to a second) until a
//!   round has no failed node: a holding that a new master lacks is found then, not at the
//!   next renewal, and each node renewed gets a listening connection first.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::hold::registry::Holding;
use crate::hold::watchdog::Hearing;
use crate::net::channel::broken;
use crate::net::listener::Heard;
use crate::net::node::Node;
use crate::net::router::Router;
use crate::pure::commands;
use crate::pure::ended::{EndCause, Ended, EndedKind};
use crate::pure::error::LossReason;
use crate::pure::info::LockInfo;
use crate::pure::kind::Kind;
use crate::pure::rw_info::RwLockInfo;
use crate::pure::sem_info::SemaphoreInfo;

/// The first pause between two rounds after a broken connection, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Starts the task that applies what `heard` brings, on `runtime`. It ends with the
/// listening connections (when the client is gone).
pub(crate) fn start(
    hearing: Hearing,
    router: Arc<Router>,
    mut heard: UnboundedReceiver<Heard>,
    runtime: &Handle,
) {
    runtime.spawn(async move {
        while let Some(news) = heard.recv().await {
            match news {
                Heard::Ended(ended) => apply(&hearing, &router, ended),
                Heard::Renew => drop(tokio::spawn(renew(hearing.clone()))),
                Heard::Broken(node) => {
                    drop(tokio::spawn(recover(hearing.clone(), router.clone(), node)))
                }
            }
        }
    });
}

/// Marks lost the holding `ended` names, if the client holds it (see the module docs).
fn apply(hearing: &Hearing, router: &Arc<Router>, ended: Ended) {
    let Some(holding) = hearing.holding(&ended.key, &ended.owner) else {
        return;
    };
    if holding.token != ended.token || !same_family(holding.kind, ended.kind) {
        return;
    }
    let reason = LossReason::Ended(ended.cause);
    let moves = matches!(ended.cause, EndCause::Deleted | EndCause::Flushed);
    if !(moves && router.follows_failovers()) {
        return hearing.mark_lost(&holding, reason);
    }
    let (hearing, router) = (hearing.clone(), router.clone());
    tokio::spawn(async move {
        if still_held(&router, &holding).await {
            let (key, cause) = (&holding.key, ended.cause);
            return tracing::debug!(key, %cause, "announced, but held where its key is now");
        }
        hearing.mark_lost(&holding, reason);
    });
}

/// Whether the node that serves `holding`'s key now has it (`LOCK.INFO`, `RWLOCK.INFO`,
/// `SEM.INFO`); false if it cannot tell.
async fn still_held(router: &Router, holding: &Holding) -> bool {
    let (key, owner, token) = (&holding.key, holding.owner.as_str(), holding.token);
    let reply = router
        .query_again(key, &commands::info(holding.kind, key))
        .await;
    let Ok(reply) = reply else {
        return false;
    };
    let found = match holding.kind {
        Kind::Lock | Kind::Latch => LockInfo::from_reply(reply)
            .ok()
            .flatten()
            .filter(|i| i.owner == owner)
            .map(|i| i.token),
        Kind::Read | Kind::Write => RwLockInfo::from_reply(reply)
            .ok()
            .flatten()
            .and_then(|i| i.holder(owner).map(|h| h.token)),
        Kind::Sem(_) => SemaphoreInfo::from_reply(reply)
            .ok()
            .flatten()
            .and_then(|i| i.holder(owner).map(|h| h.token)),
    };
    found == Some(token)
}

/// Whether a holding taken as `kind` is of the family an announcement of `ended` names.
fn same_family(kind: Kind, ended: EndedKind) -> bool {
    match ended {
        EndedKind::Lock => kind == Kind::Lock,
        EndedKind::Read | EndedKind::Write => kind.is_rw(),
        EndedKind::Permits => matches!(kind, Kind::Sem(_)),
    }
}

/// One round of every holding, now.
async fn renew(hearing: Hearing) {
    hearing.renew_all().await;
}

/// After the listening connection to `node` broke: see the module docs.
async fn recover(hearing: Hearing, router: Arc<Router>, node: Arc<Node>) {
    router.failed(&node, &broken()).await;
    let mut pause = FIRST_PAUSE;
    while let Some(true) = hearing.renew_all().await {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_names_the_family_of_the_holding() {
        assert!(same_family(Kind::Lock, EndedKind::Lock));
        assert!(same_family(Kind::Read, EndedKind::Write));
        assert!(same_family(Kind::Write, EndedKind::Read));
        assert!(same_family(Kind::Sem(2), EndedKind::Permits));
        assert!(!same_family(Kind::Lock, EndedKind::Read));
        assert!(!same_family(Kind::Sem(1), EndedKind::Lock));
        assert!(!same_family(Kind::Read, EndedKind::Permits));
    }
}
