//! `rlock info` and `rlock release --force`: looking at a lock and taking it away (with
//! `--shared`, a read-write lock; with `--permits`, a semaphore).

use std::process::ExitCode;

use rlock_client::{Client, Error, LockInfo, RwLockInfo, RwMode, SemaphoreInfo};

use crate::check::Family;
use crate::failure::Failure;
use crate::kinds::{explain, family_of, is_wrong_type, Asked};

/// `rlock info KEY [--shared|--permits]`: 0 when held on some server (and who holds it), 1
/// when free (a semaphore: when it does not exist). Without a flag, a key that is a
/// read-write lock or a semaphore is shown as what it is.
pub async fn info(clients: &[Client], key: &str, asked: Asked) -> Result<ExitCode, Failure> {
    let mut held = false;
    for client in clients {
        if clients.len() > 1 {
            println!("server: {}", client.server());
        }
        let shown = match show(client, key, asked.family).await {
            Err(e) if asked.flag.is_none() && is_wrong_type(&e) => {
                match family_of(client, key).await {
                    Some(found) => show(client, key, found).await,
                    None => Err(e),
                }
            }
            shown => shown,
        };
        match explain(shown, client, key, asked).await? {
            Some(()) => held = true,
            None => println!("{key}: free"),
        }
    }
    Ok(if held {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prints `key` as a `family` (`None`: free, or no such object).
async fn show(client: &Client, key: &str, family: Family) -> Result<Option<()>, Error> {
    Ok(match family {
        Family::Lock => client.info(key).await?.map(|i| print_info(key, &i)),
        Family::Rw => client.rw_lock(key).info().await?.map(|i| print_rw(key, &i)),
        Family::Sem => client
            .semaphore(key)
            .info()
            .await?
            .map(|i| print_sem(key, &i)),
    })
}

/// `rlock release KEY --force`: removes the lock on every server.
pub async fn force_release(
    clients: &[Client],
    key: &str,
    (force, asked): (bool, Asked),
) -> Result<ExitCode, Failure> {
    if !force {
        eprintln!("rlock: release takes the lock from its holder: add --force");
        return Ok(ExitCode::from(2));
    }
    for client in clients {
        let removed = match asked.family {
            Family::Lock => client.force_release(key).await,
            Family::Rw => client.rw_lock(key).force_release().await,
            Family::Sem => client.semaphore(key).force_release().await,
        };
        let removed = explain(removed, client, key, asked).await?;
        let state = if removed { "released" } else { "was free" };
        match clients.len() {
            1 => println!("{key}: {state}"),
            _ => println!("{key} on {}: {state}", client.server()),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_info(key: &str, info: &LockInfo) {
    println!("key: {key}");
    println!("owner: {}", info.owner);
    println!("holds: {}", info.holds);
    match info.ttl {
        Some(ttl) => println!("ttl: {}ms", ttl.as_millis()),
        None => println!("ttl: none"),
    }
    println!("token: {}", info.token);
    println!("waiters: {}", info.waiters);
}

fn print_rw(key: &str, info: &RwLockInfo) {
    println!("key: {key}");
    let mode = match info.mode {
        RwMode::Read => "read",
        RwMode::Write => "write",
    };
    println!("mode: {mode}");
    for h in &info.holders {
        let ttl = h
            .ttl
            .map_or("none".to_owned(), |ttl| format!("{}ms", ttl.as_millis()));
        println!(
            "holder: {} (reads: {}, writes: {}, ttl: {ttl}, token: {})",
            h.owner, h.reads, h.writes, h.token
        );
    }
    println!("waiters: {}", info.waiters);
}

fn print_sem(key: &str, info: &SemaphoreInfo) {
    println!("key: {key}");
    println!("permits: {}", info.permits);
    println!("available: {}", info.available);
    for h in &info.holders {
        let ttl = h
            .ttl
            .map_or("none".to_owned(), |ttl| format!("{}ms", ttl.as_millis()));
        println!(
            "holder: {} (permits: {}, ttl: {ttl}, token: {})",
            h.owner, h.permits, h.token
        );
    }
    println!("waiters: {}", info.waiters);
}
