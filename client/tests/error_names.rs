//! An error names what it concerns: the server's address on a connection error (no reply
//! in time from a paused server, a connection refused), and the lock's key.

mod support;

use std::time::Duration;

use rlock_client::{Client, ClientOptions, LockOptions};
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_from_a_paused_server_names_its_address_and_the_key() {
    let server = Server::start();
    let options = ClientOptions::new().response_timeout(Duration::from_millis(300));
    let client = Client::open_with(server.url(), options).await.unwrap();
    let address = format!("127.0.0.1:{}", server.port());
    server.stop();
    let acquired = client.lock("paused:key").try_acquire(Duration::ZERO).await;
    let info = client.info("paused:info").await;
    server.resume();
    for err in [acquired.unwrap_err(), info.unwrap_err()] {
        let text = err.to_string();
        assert!(err.is_retryable(), "{text}");
        assert!(text.contains(&address), "no address: {text}");
        assert!(text.contains("paused:"), "no key: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_from_a_server_gone_after_open_names_its_address_and_the_key() {
    let server = Server::start();
    let options = ClientOptions::new().response_timeout(Duration::from_millis(500));
    let client = Client::open_with(server.url(), options).await.unwrap();
    let address = format!("127.0.0.1:{}", server.port());
    drop(server);
    let err = client
        .lock("gone:key")
        .try_acquire(Duration::ZERO)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&address), "no address: {text}");
    assert!(text.contains("gone:key"), "no key: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_a_fenced_write_and_a_latch_call_to_a_paused_server_name_it_and_the_key() {
    let server = Server::start();
    let options = ClientOptions::new()
        .response_timeout(Duration::from_millis(300))
        .retries(0);
    let client = Client::open_with(server.url(), options).await.unwrap();
    let address = format!("127.0.0.1:{}", server.port());
    let explicit = LockOptions::new().lease(Duration::from_secs(30));
    let released = client.lock("paused:release").options(explicit);
    let released = released.acquire().await.unwrap();
    let fenced = client.lock("paused:fenced").options(explicit);
    let fenced = fenced.acquire().await.unwrap();
    server.stop();
    let mut set = redis::cmd("SET");
    set.arg("paused:fenced:value").arg("1");
    let wrote = fenced.fenced::<String>(&set).await;
    let release = released.release().await;
    let counted = client.latch("paused:latch").count().await;
    server.resume();
    let errors = [
        ("paused:fenced", wrote.unwrap_err()),
        ("paused:release", release.unwrap_err()),
        ("paused:latch", counted.unwrap_err()),
    ];
    for (key, err) in errors {
        let text = err.to_string();
        assert!(err.is_retryable(), "{text}");
        assert!(text.contains(&address), "no address: {text}");
        assert!(text.contains(&format!("key '{key}'")), "no key: {text}");
    }
    // The release is delivered once the server answers again.
    let lock = client.lock("paused:release");
    assert!(lock
        .try_acquire(Duration::from_secs(5))
        .await
        .unwrap()
        .is_some());
}
