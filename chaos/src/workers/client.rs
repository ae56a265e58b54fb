//! Client-crate workers: `acquire` cancelled at random moments, `try_acquire`,
//! `with_lock`, explicit leases, and shared [`Owner`]s that reenter.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use rlock_client::{Client, Guard, LockOptions, Owner};

use super::{Ctx, Draft, LEASE};
use crate::history::{now_us, Event};
use crate::resource::Stamp;

/// How long a worker believes it may still hold after a release that failed returned, at
/// least: the client sends it again on a fresh connection meanwhile.
const RELEASE_GRACE: Duration = Duration::from_secs(1);

/// Past the client's estimate of its lease's end, when the server surely ended it (µs).
const LEASE_MARGIN_US: u64 = 150_000;

/// A connection to the resource, retried until the run stops.
pub async fn resource_conn(ctx: &Ctx) -> Option<MultiplexedConnection> {
    while !ctx.stopped() {
        if let Ok(client) = redis::Client::open(ctx.resource.url()) {
            if let Ok(conn) = client.get_multiplexed_async_connection().await {
                return Some(conn);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Writes begin, works, and writes end (a careful holder writes no end once it knows it
/// lost; with the unsafe switch it writes anyway and believes it holds).
pub async fn section(
    ctx: &Ctx,
    conn: &mut MultiplexedConnection,
    draft: Draft,
    is_lost: impl Fn() -> bool,
) {
    let stamp = Stamp {
        key: &draft.key,
        owner: &draft.owner,
        token: draft.token,
        fenced: draft.fenced,
    };
    let Some(begin) = ctx.resource.write(conn, &stamp).await else {
        return;
    };
    tokio::time::sleep(ctx.work()).await;
    let end = if ctx.ignore_loss || !is_lost() {
        ctx.resource.write(conn, &stamp).await
    } else {
        None
    };
    let believed = ctx.ignore_loss || !is_lost();
    ctx.history
        .push(Event::Section(draft.finish(begin, end, believed)));
}

fn draft(name: &str, guard: &Guard) -> Draft {
    Draft {
        worker: name.to_owned(),
        key: guard.key().to_owned(),
        owner: guard.owner().to_owned(),
        token: guard.token(),
        fenced: true,
        lease_ms: guard.remaining().as_millis() as u64,
    }
}

/// Holds `guard` through a section, then releases it. A release that failed is sent again
/// by the client in the background until answered or until its lease has ended: the worker
/// believes it may hold until that end, and at least [`RELEASE_GRACE`] after the release
/// returned. A hold seen after that is a leak,
/// unless a fault cut the client off (its window excuses it). With the unsafe switch the
/// client does not send it again (`client_options`), and the worker believes nothing more.
async fn hold(ctx: &Ctx, conn: &mut MultiplexedConnection, name: &str, guard: Guard) {
    ctx.history.acquired(name, true);
    section(ctx, conn, draft(name, &guard), || guard.is_lost()).await;
    let (key, owner) = (guard.key().to_owned(), guard.owner().to_owned());
    // The lease ends on the server by itself then (the client's estimate, a little early).
    let lease_end_us = now_us() + guard.remaining().as_micros() as u64 + LEASE_MARGIN_US;
    if let Err(err) = guard.release().await {
        if ctx.ignore_loss {
            // The unsafe switch: nothing sends it again, and the worker believes nothing
            // after its release returned; the hold left behind is a leak.
            return eprintln!("{name}: release of {key} by {owner} failed, not sent again: {err}");
        }
        ctx.history.believe(&key, &owner, true);
        // The client sends it again until answered or until the lease has ended: the hold
        // may stay until then, or a moment after the release returned.
        let until_us = lease_end_us.max(now_us() + RELEASE_GRACE.as_micros() as u64);
        let end = Event::Belief {
            t_us: until_us,
            key,
            owner,
            begin: false,
        };
        ctx.history.push(end);
    }
}

/// A worker of one client until the run stops. Each acquisition has a fresh owner
/// ([`Client::owner`], as [`Client::lock`] takes one), known before it starts, so that its
/// belief is recorded around it: from before the acquisition to after its release returned.
pub async fn run(ctx: Arc<Ctx>, client: Client, name: String) {
    let Some(mut conn) = resource_conn(&ctx).await else {
        return;
    };
    while !ctx.stopped() {
        let (key, owner) = (ctx.key(), client.owner());
        ctx.history.believe(&key, owner.id(), true);
        round(&ctx, &mut conn, &name, owner.lock(&key)).await;
        ctx.history.believe(&key, owner.id(), false);
    }
}

/// One acquisition of `lock`, and its section if granted.
async fn round(ctx: &Ctx, conn: &mut MultiplexedConnection, name: &str, lock: rlock_client::Lock) {
    let watched = LockOptions::new().lease(LEASE).watchdog(true);
    let lock = lock.options(watched);
    let got = match ctx.rng.range(0, 4) {
        0 => {
            let cancel_after = ctx.rng.millis(1, 400);
            match tokio::time::timeout(cancel_after, lock.acquire()).await {
                Ok(got) => got.map(Some),
                Err(_) => Ok(None),
            }
        }
        1 => lock.try_acquire(ctx.rng.millis(0, 1500)).await,
        2 => {
            let explicit = LockOptions::new().lease(ctx.rng.millis(800, 3000));
            let got = lock
                .options(explicit)
                .try_acquire(ctx.rng.millis(0, 1500))
                .await;
            match got {
                Ok(Some(guard)) if forgets(ctx, &guard) => return std::mem::forget(guard),
                got => got,
            }
        }
        _ => return with_lock(ctx, conn, name, lock.options(watched.wait(LEASE))).await,
    };
    match got {
        Ok(Some(guard)) => hold(ctx, conn, name, guard).await,
        Ok(None) => {}
        Err(_) => failed(ctx, name).await,
    }
}

/// The unsafe switch: now and then a worker forgets a holding of an explicit lease of at
/// least 1.5 s, without releasing it (a leaked hold the checker must count).
fn forgets(ctx: &Ctx, guard: &Guard) -> bool {
    if !ctx.ignore_loss || guard.remaining() < Duration::from_millis(1500) || !ctx.rng.chance(10) {
        return false;
    }
    eprintln!("forgets a holding of {} by {}", guard.key(), guard.owner());
    true
}

async fn failed(ctx: &Ctx, name: &str) {
    ctx.history.acquired(name, false);
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn with_lock(
    ctx: &Ctx,
    conn: &mut MultiplexedConnection,
    name: &str,
    lock: rlock_client::Lock,
) {
    let done = lock
        .with_lock(|held| async move {
            ctx.history.acquired(name, true);
            let draft = Draft {
                worker: name.to_owned(),
                key: held.key().to_owned(),
                owner: format!("with_lock:{name}"),
                token: held.token(),
                fenced: true,
                lease_ms: held.remaining().as_millis() as u64,
            };
            section(ctx, conn, draft, || held.is_lost()).await;
        })
        .await;
    if matches!(done, Err(ref e) if !matches!(e, rlock_client::Error::Lost { .. })) {
        failed(ctx, name).await;
    }
}

/// Tasks sharing one owner: each acquires (cancelled at random, often within a few ms, or
/// without waiting),
/// holds through a section, and releases; their holdings of one key are reentries.
pub async fn run_owner_task(ctx: Arc<Ctx>, owner: Arc<Owner>, name: String) {
    let Some(mut conn) = resource_conn(&ctx).await else {
        return;
    };
    while !ctx.stopped() {
        let key = ctx.key();
        ctx.history.believe(&key, owner.id(), true);
        owner_round(&ctx, &mut conn, &name, owner.lock(&key)).await;
        ctx.history.believe(&key, owner.id(), false);
    }
}

/// One acquisition of a shared owner's task, and its section if granted.
async fn owner_round(
    ctx: &Ctx,
    conn: &mut MultiplexedConnection,
    name: &str,
    mut lock: rlock_client::Lock,
) {
    if ctx.rng.chance(30) {
        lock = lock.options(LockOptions::new().lease(ctx.rng.millis(1000, 3000)));
    } else {
        lock = lock.options(LockOptions::new().lease(LEASE).watchdog(true));
    }
    // Half the waits are cancelled within 0.2-3 ms, while their grant may be crossing.
    let cancel_after = if ctx.rng.chance(50) {
        Duration::from_micros(ctx.rng.range(200, 3000))
    } else {
        ctx.rng.millis(1, 60)
    };
    let got = if ctx.rng.chance(20) {
        lock.try_acquire(Duration::ZERO)
            .await
            .map_err(|_| ())
            .and_then(|g| g.ok_or(()))
    } else {
        match tokio::time::timeout(cancel_after, lock.acquire()).await {
            Ok(got) => got.map_err(|_| ()),
            Err(_) => return,
        }
    };
    match got {
        Ok(guard) => hold(ctx, conn, name, guard).await,
        Err(()) => failed(ctx, name).await,
    }
}
