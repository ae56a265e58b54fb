//! Loss workers: client-crate tasks that hold keys of their own — a plain lock, a read
//! hold of a read-write lock, permits of a semaphore — with the watchdog, and note when
//! each holding's `lost()` resolves. The `end-holding` fault (`faults_end.rs`) ends their
//! holdings on the server (a force release or a `DEL`); the checker counts a holder not
//! told within 250 ms as a late loss (`check_late.rs`).

use std::sync::Arc;
use std::time::Duration;

use rlock_client::{Client, Guard, LockOptions};

use super::{Ctx, LEASE};
use crate::history::{now_us, Event};
use crate::history_sem::Held;

/// The loss workers' keys: a plain lock, a read-write lock, a semaphore.
pub const LOSS_KEYS: [&str; 3] = ["loss:lock", "loss:rw", "loss:sem"];
/// The loss semaphore's permits: two holders at once.
pub const LOSS_PERMITS: u32 = 2;

/// A loss worker of `client` until the run stops.
pub async fn run(ctx: Arc<Ctx>, client: Client, name: String) {
    let options = LockOptions::new().lease(LEASE).watchdog(true);
    let semaphore = client.semaphore(LOSS_KEYS[2]).options(options);
    while !ctx.stopped() && semaphore.set_permits(LOSS_PERMITS).await.is_err() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while !ctx.stopped() {
        let wait = ctx.rng.millis(0, 1000);
        let got = match ctx.rng.range(0, 3) {
            0 => {
                client
                    .lock(LOSS_KEYS[0])
                    .options(options)
                    .try_acquire(wait)
                    .await
            }
            1 => {
                let read = client.rw_lock(LOSS_KEYS[1]).read().options(options);
                read.try_acquire(wait).await
            }
            _ => semaphore.try_acquire(1, wait).await,
        };
        match got {
            Ok(Some(guard)) => hold(&ctx, guard).await,
            Ok(None) => {}
            Err(e) => {
                eprintln!("{name}: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Holds `guard` for a while, or until `lost()` says it ended; records the holding.
async fn hold(ctx: &Ctx, guard: Guard) {
    let from_us = now_us();
    let hold_for = ctx.rng.millis(200, 3000);
    let told_us = tokio::select! {
        _ = guard.lost() => Some(now_us()),
        () = tokio::time::sleep(hold_for) => None,
    };
    let until_us = now_us();
    let held = Held {
        key: guard.key().to_owned(),
        owner: guard.owner().to_owned(),
        from_us,
        told_us,
        until_us,
    };
    ctx.history.push(Event::Held(held));
    let _ = guard.release().await;
}
