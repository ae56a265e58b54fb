//! The signals `rlock run` catches while the command runs, so that none of them ends `rlock`
//! without a release.
//!
//! - Passed on to the command's group (in a group of its own, the command no longer gets the
//!   terminal's signals): `SIGINT`, `SIGTERM`, `SIGHUP`, `SIGQUIT`, `SIGUSR1`, `SIGUSR2`,
//!   `SIGALRM`. `rlock` outlives the command, to release the lock.
//! - Other signals whose default is to end the process (`SIGVTALRM`, `SIGPROF`, `SIGIO`,
//!   `SIGPWR`, `SIGXCPU`, `SIGXFSZ`): the group gets `SIGTERM`, and `rlock` releases once it
//!   ended. (`SIGPIPE` is ignored by every Rust program; `SIGKILL` and `SIGSTOP` cannot be
//!   caught: the guardian covers the first, see `group.rs`.)
//! - `SIGTSTP` (Ctrl-Z): `supervise.rs` stops the group, then `rlock` itself.
//! - `SIGCHLD`: a child of `rlock` ended; the wait for the command's leftovers looks again.

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;

/// Signals passed on to the command's group as they are.
const PASSED_ON: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Signals that would end `rlock`: the command is asked to end instead (`SIGTERM`).
const ENDING: [libc::c_int; 6] = [
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// What `rlock` does with a signal it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Pass this signal on to the command's group.
    PassOn(libc::c_int),
    /// Stop the command's group, then `rlock` (job control).
    Suspend,
}

/// The caught signals, from the moment [`Signals::catch`] returns.
pub struct Signals {
    /// What to do, signal by signal.
    pub received: mpsc::UnboundedReceiver<Received>,
    /// A child of `rlock` ended.
    pub child: Signal,
}

impl Signals {
    /// Catches the signals; call it before the command starts, so that none is missed.
    pub fn catch() -> io::Result<Signals> {
        let (tx, received) = mpsc::unbounded_channel();
        for number in PASSED_ON {
            forward(
                signal(SignalKind::from_raw(number))?,
                &tx,
                Received::PassOn(number),
            );
        }
        for number in ENDING {
            let to_term = Received::PassOn(libc::SIGTERM);
            forward(signal(SignalKind::from_raw(number))?, &tx, to_term);
        }
        forward(
            signal(SignalKind::from_raw(libc::SIGTSTP))?,
            &tx,
            Received::Suspend,
        );
        Ok(Signals {
            received,
            child: signal(SignalKind::child())?,
        })
    }
}

/// Sends `what` on `tx` each time `stream`'s signal arrives.
fn forward(mut stream: Signal, tx: &mpsc::UnboundedSender<Received>, what: Received) {
    let tx = tx.clone();
    tokio::spawn(async move {
        while stream.recv().await.is_some() {
            if tx.send(what).is_err() {
                break;
            }
        }
    });
}
