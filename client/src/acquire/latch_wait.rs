//! Waiting for a countdown latch to open, as an acquisition waits for a lock: a
//! `LATCH.WAIT` ticket on the node's wait connection (`ticket.rs`) wherever the server takes
//! tickets, a blocking `LATCH.AWAIT` on a connection of its own otherwise (`wait.rs`). The
//! wait runs in its caller's future, and in a task of its own once that is dropped
//! (`detach.rs`), where it cancels its ticket (`LOCK.CANCEL`) or kills its connection: a
//! dropped wait leaves nothing queued on the server. A latch's outcome holds nothing, so
//! nothing is released afterwards. After a failover or a move of the latch's slot, the wait
//! queues again where the latch is now, as an acquisition does (`recover.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::acquire::detach::Detached;
use crate::acquire::recover::{Next, Setbacks};
use crate::acquire::ticket::Waited;
use crate::acquire::wait::Wait;
use crate::core::shared::Core;
use crate::pure::error::{Error, Result};
use crate::pure::kind::Kind;

/// Waits until the latch `key` is open (true), or `limit` runs out (false; `None`: no
/// limit).
pub(crate) async fn await_open(
    core: &Arc<Core>,
    key: &str,
    limit: Option<Duration>,
) -> Result<bool> {
    let (reply, answer) = oneshot::channel();
    let work = run(core.clone(), key.to_owned(), limit, reply);
    Detached::new(core, work, answer)
        .await
        .ok_or_else(|| Error::internal("a latch wait ended without an answer"))?
}

async fn run(
    core: Arc<Core>,
    key: String,
    limit: Option<Duration>,
    mut reply: oneshot::Sender<Result<bool>>,
) {
    let wait = Wait {
        core: &core,
        kind: Kind::Latch,
        key: &key,
        owner: "",
        lease_ms: 0,
        deadline: limit.map(|limit| Instant::now() + limit),
    };
    let mut setbacks = Setbacks::default();
    let opened = loop {
        let err = match once(&wait, &mut reply).await {
            Err(err) => err,
            done => break done,
        };
        // A failover, or the latch's slot moving: the wait queues again where it is now.
        match wait.after_error_granting_nothing(&err, &mut setbacks).await {
            Next::Retry(pause) => tokio::time::sleep(pause).await,
            Next::Adopt(..) | Next::Fail => break Err(err),
        }
    };
    drop(reply.send(opened));
}

/// One wait: a ticket, or a blocking `LATCH.AWAIT` where the node takes no tickets. The
/// answer is 1 when the latch opened, 0 when the limit ran out.
async fn once(wait: &Wait<'_>, reply: &mut oneshot::Sender<Result<bool>>) -> Result<bool> {
    match wait.ticket(reply).await? {
        Waited::Granted(opened) => return Ok(opened == 1),
        Waited::Ended => return Ok(false),
        Waited::Unsupported | Waited::Pulled => {}
    }
    match wait.run(reply).await? {
        Some((opened, conn)) => {
            wait.core.give_back(conn);
            Ok(opened == 1)
        }
        None => Ok(false),
    }
}
