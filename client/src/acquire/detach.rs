//! Work that runs in its caller's future, and in a task of its own only if the caller goes
//! away first.
//!
//! An acquisition must see every reply it sent a command for, whatever its caller does: a
//! reply may be a grant, to keep or to release. Running every acquisition in a spawned task
//! gives that, at the price of a task per acquisition (per wait). [`Detached`] gives it
//! without: the caller's future polls the work itself, and only when that future is dropped
//! before the work ended (a `tokio::time::timeout`, a `select!` that went the other way) is
//! the work moved into a task, where it runs to its end. The work learns that its caller
//! went away from its reply channel, which is closed before the move, and cleans up (cancels
//! its wait, releases a grant that crossed the cancellation).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::core::shared::Core;

type Work = Pin<Box<dyn Future<Output = ()> + Send>>;

/// `work`, which answers on a oneshot, as a future of its answer; see the module docs.
pub(crate) struct Detached<T> {
    core: Arc<Core>,
    work: Option<Work>,
    answer: Option<oneshot::Receiver<T>>,
}

impl<T> Detached<T> {
    /// `work` answers on the sender of `answer` (or drops it without an answer).
    pub(crate) fn new(
        core: &Arc<Core>,
        work: impl Future<Output = ()> + Send + 'static,
        answer: oneshot::Receiver<T>,
    ) -> Detached<T> {
        Detached {
            core: core.clone(),
            work: Some(Box::pin(work)),
            answer: Some(answer),
        }
    }
}

impl<T> Future for Detached<T> {
    /// The answer, or `None` if the work ended without one.
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if let Some(work) = self.work.as_mut() {
            if work.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.work = None;
        }
        let answer = self
            .answer
            .take()
            .and_then(|mut answer| answer.try_recv().ok());
        Poll::Ready(answer)
    }
}

impl<T> Drop for Detached<T> {
    fn drop(&mut self) {
        // Closed first: the work, polled next in its task, sees its caller gone.
        drop(self.answer.take());
        if let Some(work) = self.work.take() {
            drop(self.core.spawn(work));
        }
    }
}
