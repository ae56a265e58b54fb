//! The guards that together make one holding over several locks (a [`MultiLock`]'s, a
//! [`RedLock`]'s): how many are lost, the first moment enough of them are, releasing all.
//!
//! [`MultiLock`]: crate::MultiLock
//! [`RedLock`]: crate::RedLock

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use crate::acquire::guard::Guard;
use crate::pure::error::{Error, LossReason, Result};
use crate::pure::quorum::quorum_deadline;

/// The member guards of one holding, in the canonical order they were taken in.
#[derive(Debug)]
pub(crate) struct Members {
    pub(crate) guards: Vec<Guard>,
}

type Lost<'a> = Pin<Box<dyn Future<Output = LossReason> + Send + 'a>>;

impl Members {
    /// How many members are lost now (a clock check, as [`Guard::is_lost`]).
    pub(crate) fn lost_count(&self) -> usize {
        self.guards.iter().filter(|g| g.is_lost()).count()
    }

    /// The reason of a lost member, if one is.
    pub(crate) fn a_loss(&self) -> Option<LossReason> {
        self.guards.iter().find_map(Guard::loss_reason)
    }

    /// Until when at least `quorum` members surely hold (`now` if fewer than `quorum` live).
    pub(crate) fn valid_until(&self, quorum: usize) -> Instant {
        let live: Vec<Instant> = self
            .guards
            .iter()
            .filter(|g| !g.is_lost())
            .map(Guard::valid_until)
            .collect();
        quorum_deadline(&live, quorum).unwrap_or_else(Instant::now)
    }

    /// Resolves once `enough` members are lost, with the reason of the last of them. Each
    /// member's signal has a timer of its own, so this resolves by their deadlines at the
    /// latest.
    pub(crate) async fn lost(&self, enough: usize) -> LossReason {
        let mut pending: Vec<Lost<'_>> = self
            .guards
            .iter()
            .map(|g| Box::pin(g.lost()) as Lost<'_>)
            .collect();
        let (mut seen, mut last) = (0, LossReason::Expired);
        std::future::poll_fn(|cx| {
            let mut i = 0;
            while i < pending.len() {
                match pending[i].as_mut().poll(cx) {
                    Poll::Ready(reason) => {
                        drop(pending.swap_remove(i));
                        (seen, last) = (seen + 1, reason);
                    }
                    Poll::Pending => i += 1,
                }
            }
            if seen >= enough || pending.is_empty() {
                Poll::Ready(last)
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Releases every member at once (each release is sent right away, and completes even
    /// if this future is dropped); the members' errors, in order.
    pub(crate) async fn release(mut self) -> Vec<Error> {
        let pending: Vec<_> = self.guards.iter_mut().map(Guard::start_release).collect();
        let mut errors = Vec::new();
        for release in pending {
            if let Err(err) = release.await {
                errors.push(err);
            }
        }
        errors
    }

    /// Releases every member, logging what fails: for holdings given up before they were
    /// handed to the caller.
    pub(crate) async fn release_quietly(self) {
        for err in self.release().await {
            tracing::debug!(%err, "could not release a member of an abandoned acquisition");
        }
    }
}

/// The error to report for a release of members: a loss first, then any other error.
pub(crate) fn release_outcome(mut errors: Vec<Error>) -> Result<()> {
    let first = match errors.iter().position(|e| matches!(e, Error::Lost { .. })) {
        Some(lost) => errors.swap_remove(lost),
        None if errors.is_empty() => return Ok(()),
        None => errors.swap_remove(0),
    };
    Err(first)
}
