//! While the command runs, `run` asks the servers every `--check` who holds the lock
//! (`LOCK.INFO`; `RWLOCK.INFO` for a `--shared` read hold, `SEM.INFO` for a `--permits`
//! permit), so that a lock taken away (`LOCK.FORCERELEASE`, a `DEL`, another owner
//! granted it) stops the command at the first check after it, not at the next renewal
//! (every third of the lease: 10 s with the default lease).
//!
//! Only an answer counts: a server that does not answer, or answers with an error (an ACL
//! user not allowed `LOCK.INFO`), tells nothing, and the lease's safe deadline
//! (`supervise.rs`) covers it. A lock on one server is taken once its server shows it free
//! or held by another holding (another owner, or another token); a read hold or a permit,
//! once its server shows it among the holders (with its token) no more; a RedLock, once more servers show that than a
//! majority can spare.

use std::time::Duration;

use rlock_client::{Client, LockInfo, RwLockInfo, SemaphoreInfo};
use tokio::task::JoinSet;
use tokio::time::{interval, MissedTickBehavior};

/// The servers to ask, and how often.
#[derive(Clone)]
pub struct Check {
    clients: Vec<Client>,
    /// How many servers the lock is on (a RedLock's named ones, reached or not).
    servers: usize,
    every: Duration,
    family: Family,
}

/// What kind of object the key is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A plain lock (`LOCK.*`).
    Lock,
    /// A read-write lock (`--shared`, `RWLOCK.*`).
    Rw,
    /// A semaphore (`--permits`, `SEM.*`).
    Sem,
}

/// What `run` holds, as the servers show it.
pub struct Holding {
    pub key: String,
    pub owner: String,
    /// The holding's token on a single server (a RedLock's differ by server).
    pub token: Option<u64>,
}

impl Check {
    pub fn new(clients: Vec<Client>, servers: usize, every: Duration) -> Check {
        Check {
            clients,
            servers,
            every,
            family: Family::Lock,
        }
    }

    /// The same check of a read hold of a read-write lock, or of a semaphore's permits.
    pub fn of(self, family: Family) -> Check {
        Check { family, ..self }
    }

    /// Resolves on the first check that shows `holding` taken away: what the servers showed.
    pub async fn taken(self, holding: Holding) -> String {
        let mut ticks = interval(self.every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // The first tick is now: the lock was just granted.
        ticks.tick().await;
        loop {
            ticks.tick().await;
            if let Some(shown) = self.look(&holding).await {
                return shown;
            }
        }
    }

    /// Asks every server at once; what they show, when it says the lock was taken away.
    async fn look(&self, holding: &Holding) -> Option<String> {
        let mut asked = JoinSet::new();
        for client in &self.clients {
            let (client, key, family) = (client.clone(), holding.key.clone(), self.family);
            asked.spawn(async move { Shown::ask(&client, &key, family).await });
        }
        let mut elsewhere = Vec::new();
        while let Some(answer) = asked.join_next().await {
            if let Ok(Ok(info)) = answer {
                if !info.ours(holding) {
                    elsewhere.push(info);
                }
            }
        }
        let majority = self.servers / 2 + 1;
        if elsewhere.len() <= self.servers - majority {
            return None;
        }
        Some(match (self.servers, elsewhere.as_slice()) {
            (1, [info]) => format!("the server shows it {}", info.text()),
            (servers, _) => format!(
                "{} of {servers} servers show it free or held by another",
                elsewhere.len()
            ),
        })
    }
}

/// What a server shows of the lock.
enum Shown {
    Lock(Option<LockInfo>),
    Rw(Option<RwLockInfo>),
    Sem(Option<SemaphoreInfo>),
}

impl Shown {
    async fn ask(client: &Client, key: &str, family: Family) -> Result<Shown, rlock_client::Error> {
        Ok(match family {
            Family::Lock => Shown::Lock(client.info(key).await?),
            Family::Rw => Shown::Rw(client.rw_lock(key).info().await?),
            Family::Sem => Shown::Sem(client.semaphore(key).info().await?),
        })
    }

    /// Whether it shows `holding` (any token for a RedLock's).
    fn ours(&self, holding: &Holding) -> bool {
        let token = |t: u64| holding.token.is_none_or(|token| token == t);
        match self {
            Shown::Lock(info) => info
                .as_ref()
                .is_some_and(|info| info.owner == holding.owner && token(info.token)),
            Shown::Rw(info) => info
                .as_ref()
                .and_then(|info| info.holder(&holding.owner))
                .is_some_and(|holder| token(holder.token)),
            Shown::Sem(info) => info
                .as_ref()
                .and_then(|info| info.holder(&holding.owner))
                .is_some_and(|holder| token(holder.token)),
        }
    }

    fn text(&self) -> String {
        match self {
            Shown::Lock(None) | Shown::Rw(None) | Shown::Sem(None) => "free".to_owned(),
            Shown::Lock(Some(info)) => format!("held by {} (token {})", info.owner, info.token),
            Shown::Rw(Some(info)) => {
                let holders: Vec<&str> = info.holders.iter().map(|h| h.owner.as_str()).collect();
                format!("held by {}", holders.join(", "))
            }
            Shown::Sem(Some(info)) => {
                let holders: Vec<&str> = info.holders.iter().map(|h| h.owner.as_str()).collect();
                format!("held by {}", holders.join(", "))
            }
        }
    }
}
