//! Reentrancy by scope: an acquisition reenters a holding only inside that holding's work
//! (`with_lock`, `with_permits`, `Guard::scope`); elsewhere, even in the task that holds
//! the lock, it contends, and waiting for a lock its own task holds is reported.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error, Guard};
use support::Server;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Bounds an acquisition that would otherwise wait for ever.
const HUNG: Duration = Duration::from_secs(10);

async fn in_time(lock: rlock_client::Lock) -> Guard {
    let acquired = tokio::time::timeout(HUNG, lock.acquire()).await;
    acquired
        .expect("hung: a scoped acquisition waited")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_acquisition_inside_with_lock_reenters_with_the_same_token() {
    let server = Server::start();
    let client = server.client().await;
    let (client, server) = (&client, &server);
    let (outer, inner, holds) = client
        .lock("nest")
        .with_lock(|held| async move {
            let inner = in_time(client.lock("nest")).await;
            let holds = server.info("nest").unwrap().holds;
            let seen = (inner.token(), inner.owner().to_owned());
            assert_eq!(inner.release().await.unwrap(), 1, "the outer hold remains");
            ((held.token(), held.owner().to_owned()), seen, holds)
        })
        .await
        .unwrap();
    assert_eq!(inner, outer, "a reentry keeps the owner and the token");
    assert_eq!(holds, 2);
    assert_eq!(server.info("nest"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_scope_reenters_and_outside_it_the_same_task_contends() {
    let server = Server::start();
    let client = server.client().await;
    let outer = client.lock("scoped").acquire().await.unwrap();
    let inner = outer.scope(in_time(client.lock("scoped"))).await;
    assert_eq!(
        (inner.token(), inner.owner()),
        (outer.token(), outer.owner())
    );
    // Deeper futures of the scope reenter too.
    let deeper = outer
        .scope(async { tokio::join!(in_time(client.lock("scoped")), async { 7 }).0 })
        .await;
    assert_eq!(deeper.token(), outer.token());
    assert_eq!(server.info("scoped").unwrap().holds, 3);
    // Outside the scope, the same task is one more contender.
    let lock = client.lock("scoped");
    assert!(lock.try_acquire(Duration::ZERO).await.unwrap().is_none());
    // So is a task spawned inside the scope, and another client inside it.
    let moved = lock.clone();
    let spawned = outer.scope(async move {
        let task = tokio::spawn(async move { moved.try_acquire(Duration::ZERO).await });
        task.await.unwrap()
    });
    assert!(spawned.await.unwrap().is_none());
    let stranger = server.client().await.lock("scoped");
    let got = outer.scope(stranger.try_acquire(Duration::ZERO)).await;
    assert!(got.unwrap().is_none());
    assert_eq!(deeper.release().await.unwrap(), 2);
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_inside_a_writer_s_scope_reenters_and_a_write_inside_a_reader_s_is_an_upgrade() {
    let server = Server::start();
    let client = server.client().await;
    let rw = client.rw_lock("config");
    let rw = &rw;
    let (token, read_token) = rw
        .write()
        .with_lock(|held| async move {
            let read = in_time(rw.read()).await;
            let write = in_time(rw.write()).await;
            assert_eq!(write.token(), read.token());
            write.release().await.unwrap();
            let token = read.token();
            read.release().await.unwrap();
            (held.token(), token)
        })
        .await
        .unwrap();
    assert_eq!(read_token, token);
    let reading = rw.read().acquire().await.unwrap();
    // Another reader outside the scope is a holding of its own.
    let other = in_time(rw.read()).await;
    assert_ne!(other.owner(), reading.owner());
    let upgrade = reading.scope(rw.write().try_acquire(Duration::ZERO)).await;
    assert!(matches!(upgrade, Err(Error::Upgrade { .. })), "{upgrade:?}");
    other.release().await.unwrap();
    reading.release().await.unwrap();
    assert_eq!(rw.info().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_acquired_inside_with_permits_join_the_holding() {
    let server = Server::start();
    let client = server.client().await;
    let pool = client.semaphore("pool");
    pool.set_permits(3).await.unwrap();
    let pool = &pool;
    let (outer, inner) = pool
        .with_permits(1, |held| async move {
            let more = in_time(pool.permits(2)).await;
            let inner = (more.token(), more.owner().to_owned());
            assert_eq!(pool.available_permits().await.unwrap(), 0);
            assert_eq!(more.release().await.unwrap(), 1, "the outer permit remains");
            ((held.token(), held.owner().to_owned()), inner)
        })
        .await
        .unwrap();
    assert_eq!(inner, outer);
    assert_eq!(pool.available_permits().await.unwrap(), 3);
}

/// The `warn` events' `key` fields.
#[derive(Clone, Default)]
struct Warned(Arc<Mutex<Vec<String>>>);

struct Key<'a>(&'a mut Option<String>);

impl Visit for Key<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "key" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Warned {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut key = None;
            event.record(&mut Key(&mut key));
            self.0.lock().unwrap().extend(key);
        }
    }
}

#[tokio::test]
async fn waiting_outside_any_scope_for_a_lock_the_task_holds_is_reported_and_contends() {
    let warned = Warned::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warned.clone()));
    let server = Server::start();
    let client = server.client().await;
    let held = client.lock("self-wait").acquire().await.unwrap();
    let lock = client.lock("self-wait");
    let again = lock.try_acquire(Duration::from_millis(100)).await;
    assert!(again.unwrap().is_none(), "it reentered");
    assert_eq!(*warned.0.lock().unwrap(), ["self-wait"]);
    held.release().await.unwrap();
    // Once released, nothing is reported.
    let next = lock.try_acquire(Duration::from_millis(100)).await;
    next.unwrap().unwrap().release().await.unwrap();
    assert_eq!(warned.0.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_task_reentrancy_is_an_option_of_the_client() {
    let server = Server::start();
    let options = ClientOptions::new().reentrant_per_task();
    let client = Client::open_with(server.url(), options).await.unwrap();
    let task = tokio::spawn(async move {
        let outer = in_time(client.lock("per-task")).await;
        let inner = in_time(client.lock("per-task")).await;
        assert_eq!(inner.token(), outer.token());
        assert!(outer.owner().starts_with(&format!("{}:t", client.id())));
        assert_eq!(inner.release().await.unwrap(), 1);
        outer.release().await.unwrap()
    });
    assert_eq!(task.await.unwrap(), 0);
}
