//! A TCP proxy on 127.0.0.1 that can cut a link without closing it: a replica that syncs
//! through it stops receiving its master's writes at once, while both ends believe the
//! link is up (stopping a process is not enough: the kernel still buffers what was sent).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// How often a blocked read or accept looks at the proxy's flags.
const TICK: Duration = Duration::from_millis(20);

/// Forwards every connection to its port to a target port, until cut or dropped.
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Starts forwarding a free port of 127.0.0.1 to `target` on 127.0.0.1.
    pub fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        listener.set_nonblocking(true).expect("nonblocking accept");
        let (cut, stop) = (Arc::default(), Arc::default());
        let flags = Flags {
            cut: Arc::clone(&cut),
            stop: Arc::clone(&stop),
        };
        thread::spawn(move || accept(listener, target, flags));
        Proxy { port, cut, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// From now on nothing passes either way: what arrives is read and dropped, and new
    /// connections are closed. Nothing is closed that was open.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct Flags {
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

fn accept(listener: TcpListener, target: u16, flags: Flags) {
    while !flags.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) if !flags.cut.load(Ordering::SeqCst) => {
                if let Ok(server) = TcpStream::connect(("127.0.0.1", target)) {
                    link(client, server, &flags);
                }
            }
            Ok((client, _)) => drop(client),
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(TICK),
            Err(_) => return,
        }
    }
}

/// Pumps both ways between `a` and `b`, each way in a thread of its own.
fn link(a: TcpStream, b: TcpStream, flags: &Flags) {
    let ends = [
        (a.try_clone(), b.try_clone()),
        (b.try_clone(), a.try_clone()),
    ];
    for (from, to) in ends {
        if let (Ok(from), Ok(to)) = (from, to) {
            let flags = flags.clone();
            thread::spawn(move || pump(from, to, flags));
        }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, flags: Flags) {
    let _ = from.set_nonblocking(false);
    let _ = from.set_read_timeout(Some(TICK));
    let mut buf = [0u8; 16 * 1024];
    while !flags.stop.load(Ordering::SeqCst) {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        // Checked after the read: bytes read once the link is cut are dropped.
        if flags.cut.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    if !flags.cut.load(Ordering::SeqCst) {
        let _ = to.shutdown(Shutdown::Write);
    }
}
