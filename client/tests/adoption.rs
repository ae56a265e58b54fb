//! What an application moving from Redisson needs at hand: fencing inside `with_lock`, the
//! `redis` crate the client uses, and connection errors that name their server.

mod support;

use rlock_client::{Client, Error};
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_gives_its_work_fenced_the_token_and_the_owner() {
    let server = Server::start();
    let client = server.client().await;
    let (owner, token, added, kept) = client
        .lock("lock:{order:1}")
        .with_lock(|held| async move {
            let mut hset = rlock_client::redis::cmd("HSET");
            hset.arg("order:{order:1}").arg("state").arg("paid");
            let added: i64 = held.fenced(&hset).await.unwrap();
            (held.owner().to_owned(), held.token(), added, held.clone())
        })
        .await
        .unwrap();
    assert_eq!(added, 1);
    assert!(owner.starts_with(&format!("{}:", client.id())));
    assert!(token > 0);
    let state: String = server.cmd(&["HGET", "order:{order:1}", "state"]);
    assert_eq!(state, "paid");
    // Kept past the release: the server refuses its writes.
    let mut late = rlock_client::redis::cmd("HSET");
    late.arg("order:{order:1}").arg("state").arg("late");
    let refused = kept.fenced::<i64>(&late).await.unwrap_err();
    assert!(matches!(refused, Error::Lost { .. }), "{refused:?}");
    let state: String = server.cmd(&["HGET", "order:{order:1}", "state"]);
    assert_eq!(state, "paid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_error_names_the_server() {
    let url = {
        let gone = Server::start();
        gone.url()
    };
    let address = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let err = Client::open(&url).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&address), "{text}");
    assert!(
        matches!(&err, Error::Redis(e) if e.is_io_error()),
        "{err:?}"
    );
}
