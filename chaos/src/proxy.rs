//! A TCP proxy on loopback, one per link, that the faults control: pass, cut (close every
//! connection and refuse new ones), delay every chunk, or stall one direction (bytes wait,
//! as TCP's would behind a one-way partition, and flow again when it heals).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::watch;

/// What a proxy does with its traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Cut,
    Delay(Duration),
    /// Client-to-server bytes wait.
    StallUp,
    /// Server-to-client bytes wait.
    StallDown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// A proxy listening on `port` that forwards to `127.0.0.1:target`.
pub struct Proxy {
    pub port: u16,
    mode: watch::Sender<Mode>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 at once; serves on `runtime`.
    pub fn start(runtime: &Handle, target: u16) -> Proxy {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("cannot bind a proxy: {e}"));
        let port = std_listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let _ = std_listener.set_nonblocking(true);
        let (mode, watcher) = watch::channel(Mode::Pass);
        runtime.spawn(async move {
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                return;
            };
            accept_loop(listener, target, watcher).await;
        });
        Proxy { port, mode }
    }

    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Closes every connection; the accept loop ends when the sender is gone.
        self.mode.send_replace(Mode::Cut);
    }
}

async fn accept_loop(listener: TcpListener, target: u16, mut watcher: watch::Receiver<Mode>) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            changed = watcher.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        let Ok((client, _)) = accepted else { continue };
        if *watcher.borrow() == Mode::Cut {
            continue; // dropped: the client sees the connection closed
        }
        tokio::spawn(link(client, target, watcher.clone()));
    }
}

async fn link(client: TcpStream, target: u16, watcher: watch::Receiver<Mode>) {
    let connect = TcpStream::connect(("127.0.0.1", target));
    let Ok(Ok(server)) = tokio::time::timeout(Duration::from_secs(2), connect).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, Direction::Up, watcher.clone());
    let down = pump(server_read, client_write, Direction::Down, watcher);
    tokio::join!(up, down);
}

/// Copies `from` to `to` as the mode allows, until either side closes or the link is cut.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    direction: Direction,
    mut watcher: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let mode = *watcher.borrow_and_update();
        if mode == Mode::Cut {
            return;
        }
        let stalled = matches!(
            (mode, direction),
            (Mode::StallUp, Direction::Up) | (Mode::StallDown, Direction::Down)
        );
        if stalled {
            if watcher.changed().await.is_err() {
                return;
            }
            continue;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            },
            changed = watcher.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        let now = *watcher.borrow();
        if let Mode::Delay(delay) = now {
            tokio::time::sleep(delay).await;
        }
        let cut = *watcher.borrow() == Mode::Cut;
        if cut || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
