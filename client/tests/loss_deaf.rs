//! A client told not to listen (`ClientOptions::listen_for_losses(false)`) opens no
//! listening connection, and finds a holding the server ended at its next renewal instead
//! (`LossReason::NotHeld`), as clients did before the server announced ends.

mod support;

use std::time::Duration;

use rlock_client::{Client, ClientOptions, LockOptions, LossReason};
use support::Server;

#[tokio::test]
async fn a_client_that_does_not_listen_finds_the_end_at_its_renewal() {
    let server = Server::start();
    let options = ClientOptions::new().listen_for_losses(false);
    let client = Client::open_with(server.url(), options)
        .await
        .expect("open");
    let lease = LockOptions::new()
        .lease(Duration::from_millis(900))
        .watchdog(true);
    let guard = client
        .lock("k")
        .options(lease)
        .acquire()
        .await
        .expect("acquire");
    let mut admin = server.conn();
    let listeners: String = redis::cmd("CLIENT")
        .arg(&["LIST", "TYPE", "pubsub"])
        .query(&mut admin)
        .expect("client list");
    assert!(listeners.is_empty(), "no listening connection: {listeners}");
    let forced: i64 = redis::cmd("LOCK.FORCERELEASE")
        .arg("k")
        .query(&mut admin)
        .expect("force release");
    assert_eq!(forced, 1);
    let reason = tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("the watchdog finds it");
    // Found by a renewal: an announcement would have said `Ended(ForceRelease)`.
    assert_eq!(reason, LossReason::NotHeld);
}
