//! Telling a holder at once that its holding ended (`LOCK.LISTEN`): the node's table of
//! listened holdings (`rlock_core::watch`), kept as the module grants, reenters and releases
//! them; the holdings of a key compared with what it holds after anything else touched it
//! (a force release, a lease end, a keyspace event); and the announcements, published on
//! the owner's loss channel a slice at a time.
//!
//! Everything runs on Redis's main thread: the table is a thread-local, and no borrow of it
//! is held across a call into Redis.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use crate::host::ffi::OwnedString;
use crate::host::{guard, node};
use crate::store::{publish, LockKey, Mode, Name};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::registry::{Db, SLICE};
use rlock_core::rwlock::{Kind, RwMode};
use rlock_core::watch::{Cause, Found, Held, Loss, Watch, Watched};

thread_local! {
    static WATCHED: RefCell<Watched> = RefCell::new(Watched::default());
    static PENDING: RefCell<VecDeque<Loss>> = const { RefCell::new(VecDeque::new()) };
}

/// Whether anything is listened for or tracked, read on every write: one load.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether a timer that publishes pending announcements is armed.
static DRAINING: AtomicBool = AtomicBool::new(false);

fn with<R>(f: impl FnOnce(&mut Watched) -> R) -> R {
    WATCHED.with(|w| {
        let mut watched = w.borrow_mut();
        let result = f(&mut watched);
        ACTIVE.store(watched.active(), Ordering::Relaxed);
        result
    })
}

/// Whether any holding's end may have to be announced on this node.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Connection `client` listens for the ends of holdings whose owner has `prefix`.
pub fn listen(client: u64, prefix: &[u8]) {
    with(|w| w.listen(client, prefix));
}

/// Connection `client` closed.
pub fn client_gone(client: u64) {
    if active() {
        with(|w| w.client_gone(client));
    }
}

/// (listened holdings, announcements not yet published).
pub fn gauges() -> (usize, usize) {
    let tracked = WATCHED.with(|w| w.borrow().tracked());
    (tracked, PENDING.with(|p| p.borrow().len()))
}

/// What `kind` holds, for the table.
pub fn held_of(kind: Kind) -> Option<Held> {
    Some(match kind {
        Kind::Lock => Held::Lock,
        Kind::Rw(RwMode::Read) => Held::Read,
        Kind::Rw(RwMode::Write) => Held::Write,
        Kind::Permits(_) => Held::Permits,
        Kind::Latch => return None,
    })
}

/// `owner` now holds `held` of `key` with `token`, `count` times (tracked if listened).
pub fn holds(ctx: *mut raw::RedisModuleCtx, key: &[u8], owner: &[u8], watch: (Held, i64, i64)) {
    if !active() {
        return;
    }
    let db = node::selected_db(ctx);
    with(|w| w.holds((db, key), owner, watch));
}

/// `owner` released `held` of `key` itself, `left` remaining: nothing to announce.
pub fn released(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    (owner, held): (&[u8], Held),
    left: i64,
) {
    if active() {
        let db = node::selected_db(ctx);
        with(|w| w.released(db, key, (owner, held), left));
    }
}

/// Whether `key` of the selected database has listened holdings.
pub fn tracks(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> bool {
    active() && WATCHED.with(|w| w.borrow().has(node::selected_db(ctx), key))
}

/// `key` of database `db` is gone (its value too): each of its listened holdings ended.
pub fn key_gone(ctx: *mut raw::RedisModuleCtx, (db, key): (Db, &[u8]), cause: Cause) {
    if active() {
        let lost = with(|w| w.key_gone(db, key, cause));
        announce(ctx, lost);
    }
}

/// Database `db` (every one: -1) was emptied or swapped: each listened holding ended.
pub fn db_gone(ctx: *mut raw::RedisModuleCtx, db: Db, cause: Cause) {
    if active() {
        let lost = with(|w| w.db_gone(db, cause));
        announce(ctx, lost);
    }
}

/// The node became a replica: what it tracked is its new master's to say.
pub fn forget_holdings() {
    if active() {
        with(Watched::forget_holdings);
    }
}

/// Compares the listened holdings of `key` (selected database) with what it holds now:
/// those that ended are announced for `cause`, except `asker`'s own (its command ended
/// them). A holding whose lease has passed has ended, whatever the key still says.
pub fn settle(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    (cause, asker): (Cause, Option<&[u8]>),
) -> Result<(), LockError> {
    settle_and_track(ctx, key, cause, (asker, &[]))
}

/// [`settle`], and `asker`'s holdings of the kinds `held` tracked as the key holds them now
/// (after its own acquisition or renewal), from one reading of the key.
pub fn settle_and_track(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    cause: Cause,
    (asker, held): (Option<&[u8]>, &[Held]),
) -> Result<(), LockError> {
    let listened = asker.filter(|a| active() && WATCHED.with(|w| w.borrow().listened(a)));
    let probes: Vec<Watch> = match listened {
        Some(owner) => held.iter().map(|&held| probe(owner, held)).collect(),
        None => Vec::new(),
    };
    let tracked = tracks(ctx, key);
    if !tracked && probes.is_empty() {
        return Ok(());
    }
    let db = node::selected_db(ctx);
    let watches = WATCHED.with(|w| w.borrow().of(db, key));
    let (found, probed) = reread_all(ctx, key, &watches, &probes)?;
    let lost = with(|w| {
        let lost = if tracked {
            let found: Vec<(Watch, Found)> = watches.into_iter().zip(found).collect();
            w.settle((db, key), &found, (cause, asker))
        } else {
            Vec::new()
        };
        for (p, now) in probes.iter().zip(probed) {
            if let Found::Holds { token, count } = now {
                w.holds((db, key), &p.owner, (p.held, token, count));
            }
        }
        lost
    });
    announce(ctx, lost);
    Ok(())
}

/// What `key` holds now for each of `watches` and of `probes`, from one opening of it.
fn reread_all(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    watches: &[Watch],
    probes: &[Watch],
) -> Result<(Vec<Found>, Vec<Found>), LockError> {
    let name = OwnedString::new(ctx, key)?;
    let opened = LockKey::open(ctx, name.0, Mode::Read)?;
    let now = node::now_ms();
    let read = |w: &Watch| reread(ctx, &opened, w, now).unwrap_or(Found::Gone);
    Ok((
        watches.iter().map(read).collect(),
        probes.iter().map(read).collect(),
    ))
}

/// A holding of `owner` of kind `held` to look up.
fn probe(owner: &[u8], held: Held) -> Watch {
    Watch {
        owner: owner.to_vec(),
        held,
        token: 0,
        count: 0,
    }
}

/// What `key` holds now for the owner and kind of `watch`.
fn reread(
    ctx: *mut raw::RedisModuleCtx,
    key: &LockKey,
    watch: &Watch,
    now: i64,
) -> Result<Found, LockError> {
    let owner = OwnedString::new(ctx, &watch.owner)?;
    let name = Name::of(&owner);
    let holds = |token, count, deadline: Option<i64>| match deadline {
        Some(d) if d <= now => Found::Gone,
        _ if count > 0 => Found::Holds { token, count },
        _ => Found::Gone,
    };
    Ok(match watch.held {
        Held::Lock => match key.read()? {
            Some(h) if h.owner == watch.owner => holds(h.token, h.count, None),
            _ => Found::Gone,
        },
        Held::Read | Held::Write => match key.glance(&name)?.mine {
            Some(h) => {
                let count = if watch.held == Held::Read {
                    h.reads
                } else {
                    h.writes
                };
                holds(h.token, count, h.deadline_ms)
            }
            None => Found::Gone,
        },
        Held::Permits => match key.sem_glance(&name)?.mine {
            Some(h) => holds(h.token, h.permits, Some(h.deadline_ms)),
            None => Found::Gone,
        },
    })
}

/// Tracks what `owner` holds of `key` now, of the kinds `held` (after its own renewal).
pub fn track(
    ctx: *mut raw::RedisModuleCtx,
    key: &[u8],
    owner: &[u8],
    held: &[Held],
) -> Result<(), LockError> {
    if !active() || !WATCHED.with(|w| w.borrow().listened(owner)) {
        return Ok(());
    }
    let probes: Vec<Watch> = held.iter().map(|&held| probe(owner, held)).collect();
    let (_, probed) = reread_all(ctx, key, &[], &probes)?;
    for (p, now) in probes.iter().zip(probed) {
        if let Found::Holds { token, count } = now {
            holds(ctx, key, owner, (p.held, token, count));
        }
    }
    Ok(())
}

/// Queues `lost` for publishing by a timer on the next turn of the event loop (never from
/// inside a keyspace event), a slice per turn.
fn announce(ctx: *mut raw::RedisModuleCtx, lost: Vec<Loss>) {
    if lost.is_empty() {
        return;
    }
    PENDING.with(|p| p.borrow_mut().extend(lost));
    if !DRAINING.swap(true, Ordering::Relaxed)
        && node::create_timer(ctx, 0, drain_timer, std::ptr::null_mut()).is_none()
    {
        DRAINING.store(false, Ordering::Relaxed);
    }
}

/// Publishes up to a slice of pending announcements; true if more are left.
fn drain(ctx: *mut raw::RedisModuleCtx) -> bool {
    for _ in 0..SLICE {
        let Some(loss) = PENDING.with(|p| p.borrow_mut().pop_front()) else {
            return false;
        };
        match publish::loss_message(ctx, &loss.channel(), &loss.message()) {
            Ok(()) => counters::LOSSES_ANNOUNCED.bump(),
            Err(e) => guard::callback("announcing a loss", || Err(e)),
        }
    }
    PENDING.with(|p| !p.borrow().is_empty())
}

extern "C" fn drain_timer(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    node::timer_fired();
    guard::callback("loss announcements", || {
        DRAINING.store(false, Ordering::Relaxed);
        if drain(ctx)
            && !DRAINING.swap(true, Ordering::Relaxed)
            && node::create_timer(ctx, 0, drain_timer, std::ptr::null_mut()).is_none()
        {
            DRAINING.store(false, Ordering::Relaxed);
        }
        Ok(())
    });
}
