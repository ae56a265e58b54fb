//! What every handle of one client shares: its id and owner numbering, the router (the
//! nodes, their shared connections, the slot map), the wait connections (one per node for
//! ticket waits, a pool for blocking ones), the watchdog and its registry of holdings, and
//! the runtime that runs background work.
//!
//! Guards and acquisitions hold an `Arc<Core>`; the public `Client` is a handle on one. The
//! methods are the seams they need, so nothing above reaches into the parts: here opening
//! and the ids, in `send.rs` the commands sent, in `holds.rs` the holdings and closing.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use redis::aio::ConnectionManager;
use redis::{RedisResult, Value};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::hold::watchdog::Watchdog;
use crate::net::identity;
use crate::net::listener::Listeners;
use crate::net::pool::WaitPool;
use crate::net::router::Router;
use crate::net::sentinel::Sentinels;
use crate::net::tickets::Tickets;
use crate::pure::commands;
use crate::pure::config::ClientOptions;
use crate::pure::error::{Error, Result};
use crate::pure::turns::Turns;

/// The shared state of one client.
pub(crate) struct Core {
    pub(super) id: String,
    pub(super) next_owner: AtomicU64,
    pub(super) router: Arc<Router>,
    pub(super) waits: WaitPool,
    pub(super) tickets: Tickets,
    pub(super) watchdog: Watchdog,
    /// One listening connection per node, which hears of holdings the server ended.
    pub(super) listeners: Arc<Listeners>,
    pub(super) runtime: Handle,
    pub(super) options: ClientOptions,
    pub(super) closed: AtomicBool,
    pub(super) turns: Arc<Turns>,
    /// What the server reports as its identity (`identity.rs`); `None` for a master
    /// followed through Sentinel.
    pub(super) identity: Option<String>,
}

impl Core {
    /// Connects through `redis` (checking for the module, loading a cluster's slot map) and
    /// starts the watchdog on the current tokio runtime. With `sentinels`, `redis` is the
    /// master they named, and the client follows the master they name after a failover.
    pub(crate) async fn open(
        redis: redis::Client,
        sentinels: Option<Sentinels>,
        options: ClientOptions,
    ) -> Result<Core> {
        let followed = sentinels.is_some();
        let router = Arc::new(Router::new(redis, sentinels, options));
        check_module(&mut router.seed().shared().await?).await?;
        router.discover().await?;
        let identity = if followed {
            None
        } else {
            identity::learn(&mut router.seed().shared().await?).await
        };
        let runtime = Handle::current();
        let id = uuid::Uuid::new_v4().to_string();
        let (listeners, heard) = Listeners::new(&id);
        let both = (router.clone(), listeners.clone());
        let watchdog = Watchdog::start(both, &runtime, options.margin_duration());
        crate::hold::heard::start(watchdog.hearing(), router.clone(), heard, &runtime);
        let core = Core {
            id,
            next_owner: AtomicU64::new(1),
            watchdog,
            listeners,
            waits: WaitPool::default(),
            tickets: Tickets::default(),
            router,
            runtime,
            options,
            closed: AtomicBool::new(false),
            turns: Arc::default(),
            identity,
        };
        tracing::debug!(client = %core.id, "rlock client connected");
        Ok(core)
    }

    /// The client's random id, the prefix of its owner ids.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The server's identity, if it reports one (`identity.rs`).
    pub(crate) fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// The client's settings.
    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// A fresh owner id, `<client id>:<n>`.
    pub(crate) fn next_owner_id(&self) -> String {
        let n = self.next_owner.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.id)
    }

    /// Runs `work` on the client's runtime.
    pub(crate) fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.spawn(work)
    }

    /// Whether [`Core::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// Asks the server whether it knows `LOCK.ACQUIRE`. A server that refuses `COMMAND INFO`
/// (ACL) is given the benefit of the doubt: the first lock command will tell.
async fn check_module(conn: &mut ConnectionManager) -> Result<()> {
    let reply: RedisResult<Vec<Value>> = commands::module_probe().query_async(conn).await;
    match reply {
        Ok(found) if matches!(found.first(), None | Some(Value::Nil)) => {
            Err(Error::ModuleMissing {
                detail: "COMMAND INFO does not know LOCK.ACQUIRE".into(),
            })
        }
        Ok(_) => Ok(()),
        Err(err) if err.is_io_error() => Err(err.into()),
        Err(err) => {
            tracing::debug!(%err, "COMMAND INFO refused; not checking for the module");
            Ok(())
        }
    }
}
