//! Client-wide settings: every timeout the client uses, its retries, and the safety margin of
//! its deadlines, in one place.

use std::time::Duration;

/// Settings of a client, built with chainable by-value methods; given to
/// [`Client::open_with`](crate::Client::open_with).
///
/// Every wait of the client is bounded by them: no call hangs on a server that stopped
/// answering (a crashed host, a partition, a `SIGSTOP`ped process).
///
/// | setting | default | what it bounds |
/// |---|---|---|
/// | [`connect_timeout`](ClientOptions::connect_timeout) | 2 s | opening a connection (TCP and handshake) |
/// | [`response_timeout`](ClientOptions::response_timeout) | 2 s | each command's reply (not a wait's) |
/// | [`wait_grace`](ClientOptions::wait_grace) | 2 s | how late a wait's reply may be after its `WAIT` deadline |
/// | [`keepalive`](ClientOptions::keepalive) | 5 s | how often a waiting acquisition checks that its server answers |
/// | [`retries`](ClientOptions::retries) | 2 | reconnections of a shared connection; acquisitions sent again on a fresh connection after a broken one |
/// | [`margin`](ClientOptions::margin) | 20 ms | time taken off every lease, with 1% of it for clock drift |
/// | [`quorum_timeout`](ClientOptions::quorum_timeout) | 10 s | how long a RedLock acquisition goes on while fewer than a majority of its servers answer |
/// | [`listen_for_losses`](ClientOptions::listen_for_losses) | on | one connection per node hears the server announce an ended holding at once |
///
/// ```
/// use std::time::Duration;
/// use rlock_client::ClientOptions;
///
/// let options = ClientOptions::new()
///     .response_timeout(Duration::from_millis(500))
///     .margin(Duration::from_millis(50));
/// assert_eq!(options.response_timeout_duration(), Duration::from_millis(500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientOptions {
    connect: Duration,
    response: Duration,
    wait_grace: Duration,
    keepalive: Duration,
    retries: usize,
    margin: Duration,
    quorum: Duration,
    /// Known unsafe, for the chaos checker only (see `unsafe_release_once`).
    release_once: bool,
    per_task: bool,
    deaf: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect: Duration::from_secs(2),
            response: Duration::from_secs(2),
            wait_grace: Duration::from_secs(2),
            keepalive: Duration::from_secs(5),
            retries: 2,
            margin: Duration::from_millis(20),
            quorum: Duration::from_secs(10),
            release_once: false,
            per_task: false,
            deaf: false,
        }
    }
}

impl ClientOptions {
    /// The defaults of the table above.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long opening a connection may take, handshake and retries included: `Client::open`
    /// on a server that does not answer fails within it.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a command's reply may take (waits excepted: see
    /// [`wait_grace`](ClientOptions::wait_grace) and [`keepalive`](ClientOptions::keepalive)).
    /// A command without a reply in time fails with [`Error::Unresponsive`](crate::Error::Unresponsive).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response = timeout.max(Duration::from_millis(1));
        self
    }

    /// How late the reply to a `LOCK.ACQUIRE ... WAIT` may come after its deadline before
    /// the wait is given up.
    pub fn wait_grace(mut self, grace: Duration) -> Self {
        self.wait_grace = grace;
        self
    }

    /// How often a waiting acquisition checks (`PING`, within the response timeout) that its
    /// server still answers; also the idle time before TCP keepalive probes on wait
    /// connections. A wait whose server stops answering fails with
    /// [`Error::Unresponsive`](crate::Error::Unresponsive) at most this plus twice the
    /// response timeout after the server stopped (or its wait limit plus the wait grace
    /// plus twice the response timeout, if that is sooner).
    pub fn keepalive(mut self, interval: Duration) -> Self {
        self.keepalive = interval.max(Duration::from_millis(1));
        self
    }

    /// How many times a shared connection tries to reconnect before a command fails, and how
    /// many times an acquisition whose connection broke is sent again on a fresh one (after
    /// checking whether the broken one was granted).
    pub fn retries(mut self, retries: usize) -> Self {
        self.retries = retries;
        self
    }

    /// The safety margin: a lease set by a request sent at `t` is counted on until
    /// `t + lease - margin - lease/100` (at most half the lease is taken off). Cover one
    /// round trip and the time your work needs to stop once told.
    pub fn margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// How long a [`RedLock`](crate::RedLock) acquisition, even one without a wait limit,
    /// goes on while fewer than a majority of its servers answer; it then fails with
    /// [`Error::NoQuorum`](crate::Error::NoQuorum). A RedLock uses the smallest of its
    /// clients' settings.
    pub fn quorum_timeout(mut self, timeout: Duration) -> Self {
        self.quorum = timeout;
        self
    }

    /// Known unsafe: a release that fails for its connection is not sent again, and its
    /// hold stays on the server until its lease ends. It exists for the chaos checker, to
    /// show that it counts such holds (`rlock-chaos --unsafe`); never use it.
    #[doc(hidden)]
    pub fn unsafe_release_once(mut self) -> Self {
        self.release_once = true;
        self
    }

    /// Makes the acquisitions of [`Client::lock`](crate::Client::lock) (and of its read-write
    /// locks and semaphores) reentrant per tokio task, as Redisson's are per thread: owned
    /// by the calling task (`<client id>:t<task id>`; outside any task, the calling thread,
    /// `<client id>:h<n>`), so that a task acquiring a lock it holds adds a hold at once.
    /// Futures run together in one task (`join!`, `join_all`, `select!`) then share its
    /// holdings and do not exclude each other. Off by default: an acquisition then reenters
    /// only inside its holding's scope (`with_lock`, [`Guard::scope`](crate::Guard::scope)).
    pub fn reentrant_per_task(mut self) -> Self {
        self.per_task = true;
        self
    }

    /// Whether the client keeps one listening connection per node on which the server
    /// announces, at once, each holding of the client's that it ended without being asked
    /// (`LOCK.LISTEN`: a force release, a `DEL`, a flush, an eviction, ...). On by default.
    /// Off, such an end is found by the watchdog at its next renewal (a third of the lease
    /// later at most), or at the holding's safe deadline, and no listening connection is
    /// opened.
    pub fn listen_for_losses(mut self, on: bool) -> Self {
        self.deaf = !on;
        self
    }

    /// See [`listen_for_losses`](ClientOptions::listen_for_losses).
    pub fn listens_for_losses(&self) -> bool {
        !self.deaf
    }

    /// See [`reentrant_per_task`](ClientOptions::reentrant_per_task).
    pub fn reenters_per_task(&self) -> bool {
        self.per_task
    }

    /// Whether [`unsafe_release_once`](ClientOptions::unsafe_release_once) was set.
    pub(crate) fn releases_once(&self) -> bool {
        self.release_once
    }

    /// See [`quorum_timeout`](ClientOptions::quorum_timeout).
    pub fn quorum_timeout_duration(&self) -> Duration {
        self.quorum
    }

    /// See [`connect_timeout`](ClientOptions::connect_timeout).
    pub fn connect_timeout_duration(&self) -> Duration {
        self.connect
    }

    /// See [`response_timeout`](ClientOptions::response_timeout).
    pub fn response_timeout_duration(&self) -> Duration {
        self.response
    }

    /// See [`wait_grace`](ClientOptions::wait_grace).
    pub fn wait_grace_duration(&self) -> Duration {
        self.wait_grace
    }

    /// See [`keepalive`](ClientOptions::keepalive).
    pub fn keepalive_interval(&self) -> Duration {
        self.keepalive
    }

    /// See [`retries`](ClientOptions::retries).
    pub fn retry_count(&self) -> usize {
        self.retries
    }

    /// See [`margin`](ClientOptions::margin).
    pub fn margin_duration(&self) -> Duration {
        self.margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_bound_every_wait() {
        let o = ClientOptions::new();
        assert_eq!(o.connect_timeout_duration(), Duration::from_secs(2));
        assert_eq!(o.response_timeout_duration(), Duration::from_secs(2));
        assert_eq!(o.wait_grace_duration(), Duration::from_secs(2));
        assert_eq!(o.keepalive_interval(), Duration::from_secs(5));
        assert_eq!(o.retry_count(), 2);
        assert_eq!(o.margin_duration(), Duration::from_millis(20));
        assert_eq!(o.quorum_timeout_duration(), Duration::from_secs(10));
    }

    #[test]
    fn zero_timeouts_are_raised_to_a_millisecond() {
        let o = ClientOptions::new()
            .connect_timeout(Duration::ZERO)
            .response_timeout(Duration::ZERO)
            .keepalive(Duration::ZERO);
        assert_eq!(o.connect_timeout_duration(), Duration::from_millis(1));
        assert_eq!(o.response_timeout_duration(), Duration::from_millis(1));
        assert_eq!(o.keepalive_interval(), Duration::from_millis(1));
    }
}
