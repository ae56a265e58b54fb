//! A server without the rlock module gives a clear `ModuleMissing`, not "unknown command".

mod support;

use rlock_client::blocking::BlockingClient;
use rlock_client::{Client, Error};
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_against_a_server_without_the_module_is_module_missing() {
    let server = Server::start_without_module();
    let err = Client::open(server.url()).await.unwrap_err();
    assert!(matches!(err, Error::ModuleMissing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("rlock module is not loaded"), "{text}");
    assert!(text.contains("--loadmodule"), "{text}");
    let err = Client::from_redis(server.redis()).await.unwrap_err();
    assert!(matches!(err, Error::ModuleMissing { .. }), "{err:?}");
}

#[test]
fn blocking_open_against_a_server_without_the_module_is_module_missing() {
    let server = Server::start_without_module();
    let err = BlockingClient::open(server.url()).unwrap_err();
    assert!(matches!(err, Error::ModuleMissing { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_a_redis_io_error() {
    let server = Server::start_without_module();
    let url = server.url();
    drop(server);
    let err = Client::open(url).await.unwrap_err();
    assert!(
        matches!(&err, Error::Redis(e) if e.is_io_error() || e.is_connection_refusal()),
        "{err:?}"
    );
}
