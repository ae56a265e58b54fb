//! A connection whose peer vanished silently (no FIN, no RST: a dead host, a cut network)
//! only ever times out: the client must not keep it.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rlock_client::{Client, ClientOptions, Error};
use std::io::ErrorKind::WouldBlock;
use support::Server;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// A loopback TCP proxy to a server; [`Proxy::cut`] black-holes the connections open so far
/// (they stay open, and swallow what they get), while new ones go through.
struct Proxy {
    port: u16,
    epoch: Arc<AtomicU64>,
}

impl Proxy {
    async fn to(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let epoch = Arc::new(AtomicU64::new(0));
        let current = epoch.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let born = current.load(Ordering::SeqCst);
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, current.clone(), born));
                tokio::spawn(pump(server_read, client_write, current.clone(), born));
            }
        });
        Proxy { port, epoch }
    }

    fn cut(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either closes; once the epoch moves past `born`, reads and
/// drops instead.
async fn pump(from: OwnedReadHalf, to: OwnedWriteHalf, epoch: Arc<AtomicU64>, born: u64) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if from.readable().await.is_err() {
            return;
        }
        let n = match from.try_read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == WouldBlock => continue,
            Err(_) => return,
        };
        if epoch.load(Ordering::SeqCst) == born && !write_all(&to, &buf[..n]).await {
            return;
        }
    }
}

async fn write_all(to: &OwnedWriteHalf, mut data: &[u8]) -> bool {
    while !data.is_empty() {
        if to.writable().await.is_err() {
            return false;
        }
        match to.try_write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_connection_whose_peer_vanished_is_replaced() {
    let server = Server::start();
    let proxy = Proxy::to(server.port()).await;
    let options = ClientOptions::new().response_timeout(Duration::from_millis(500));
    let url = format!("redis://127.0.0.1:{}/", proxy.port);
    let client = Client::open_with(url, options).await.unwrap();
    assert_eq!(client.info("k").await.unwrap(), None);
    proxy.cut();
    let err = client.info("k").await.unwrap_err();
    assert!(matches!(err, Error::Unresponsive { .. }), "{err:?}");
    // The server is fine: within a few tries the client talks to it again.
    let started = Instant::now();
    let mut answered = false;
    for _ in 0..10 {
        if client.info("k").await.is_ok() {
            answered = true;
            break;
        }
    }
    assert!(answered, "still no answer after {:?}", started.elapsed());
    let guard = client.lock("k").acquire().await.unwrap();
    guard.release().await.unwrap();
}
