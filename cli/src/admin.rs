//! `rlock info` and `rlock release --force`: looking at a lock and taking it away.

use std::process::ExitCode;

use rlock_client::{Client, LockInfo};

use crate::failure::{At, Failure};

/// `rlock info KEY`: 0 when held on some server (and who holds it), 1 when free.
pub async fn info(clients: &[Client], key: &str) -> Result<ExitCode, Failure> {
    let mut held = false;
    for client in clients {
        if clients.len() > 1 {
            println!("server: {}", client.server());
        }
        match client.info(key).await.at(client.server())? {
            Some(info) => {
                print_info(key, &info);
                held = true;
            }
            None => println!("{key}: free"),
        }
    }
    Ok(if held {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `rlock release KEY --force`: removes the lock on every server.
pub async fn force_release(
    clients: &[Client],
    key: &str,
    force: bool,
) -> Result<ExitCode, Failure> {
    if !force {
        eprintln!("rlock: release takes the lock from its holder: add --force");
        return Ok(ExitCode::from(2));
    }
    for client in clients {
        let removed = client.force_release(key).await.at(client.server())?;
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
