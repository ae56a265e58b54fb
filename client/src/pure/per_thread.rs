//! What the blocking API keeps beside the async client: a runtime of its own, and each
//! thread's owner id while the thread holds guards; and the tag of an async acquisition's
//! caller: its task's, or outside any task its thread's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use tokio::runtime::{Builder, Runtime};

use crate::pure::error::{Error, Result};

/// A runtime that is shut down without waiting, wherever it is dropped.
#[derive(Debug)]
pub(crate) struct Rt(Option<Runtime>);

impl Rt {
    /// Runs `f` to completion; an error on a thread that is running async tasks, where
    /// blocking would stall the runtime (and tokio would panic).
    pub(crate) fn block_on<T, F: std::future::Future<Output = Result<T>>>(
        &self,
        f: F,
    ) -> Result<T> {
        if runs_async_tasks() {
            return Err(Error::InvalidArgument {
                detail: REFUSED.into(),
            });
        }
        match &self.0 {
            Some(rt) => rt.block_on(f),
            None => Err(Error::internal("the blocking client's runtime is gone")),
        }
    }
}

/// Why a blocking call is refused where it would block a runtime's thread.
const REFUSED: &str = "the blocking API cannot block a thread that runs async tasks (an async \
    task, or a future in block_on); call it from tokio::task::spawn_blocking or a plain \
    thread, or use Client";

/// True while this thread is polling an async task or a `block_on` future: where tokio's
/// own blocking calls (`Mutex::blocking_lock`) panic. Plain threads, `spawn_blocking`,
/// `block_in_place` and a thread that only entered a runtime's handle may block.
///
/// Tokio keeps that state private; its task budget tells the same: a runtime sets a budget
/// while it polls a task or a `block_on` future, and lifts it for blocking sections. The
/// budget is spent until it runs out (a constrained one is at most 128), then restored. A
/// future wrapped in `tokio::task::unconstrained` has no budget: there tokio's own check
/// panics instead of this error.
pub(crate) fn runs_async_tasks() -> bool {
    use std::task::{Context, Poll, Waker};
    use tokio::task::coop::{has_budget_remaining, poll_proceed};
    if tokio::runtime::Handle::try_current().is_err() {
        return false;
    }
    if !has_budget_remaining() {
        return true;
    }
    let mut cx = Context::from_waker(Waker::noop());
    // Dropped last, it puts back the budget as it was found.
    let Poll::Ready(_first) = poll_proceed(&mut cx) else {
        return true;
    };
    for _ in 0..1024 {
        if !has_budget_remaining() {
            return true;
        }
        match poll_proceed(&mut cx) {
            Poll::Ready(spent) => spent.made_progress(),
            Poll::Pending => return true,
        }
    }
    false
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// The runtime of one blocking client: one worker thread for its background work.
pub(crate) fn runtime() -> Result<Rt> {
    let rt = Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rlock-client")
        .enable_all()
        .build()
        .map_err(|e| Error::internal(&format!("cannot start a runtime: {e}")))?;
    Ok(Rt(Some(rt)))
}

/// The owner id of each thread, with how many of its guards live.
#[derive(Debug, Default)]
pub(crate) struct Threads(Mutex<HashMap<ThreadId, (Arc<str>, usize)>>);

impl Threads {
    pub(crate) fn map(&self) -> MutexGuard<'_, HashMap<ThreadId, (Arc<str>, usize)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `thread`'s owner id, made with `fresh` if it has none.
    pub(crate) fn id(&self, thread: ThreadId, fresh: impl FnOnce() -> Arc<str>) -> Arc<str> {
        self.map()
            .entry(thread)
            .or_insert_with(|| (fresh(), 0))
            .0
            .clone()
    }

    /// One more guard of `thread`, held as `owner`.
    pub(crate) fn held(&self, thread: ThreadId, owner: &str) {
        self.map()
            .entry(thread)
            .or_insert_with(|| (owner.into(), 0))
            .1 += 1;
    }

    /// One guard fewer for `thread` (`None`: none ended, a try that got nothing); its id is
    /// forgotten when none is left.
    pub(crate) fn ended(&self, thread: ThreadId, guard: Option<()>) {
        let mut map = self.map();
        if let Some((_, guards)) = map.get_mut(&thread) {
            *guards = guards.saturating_sub(usize::from(guard.is_some()));
            if *guards == 0 {
                map.remove(&thread);
            }
        }
    }
}

/// The calling task's tag, `<client id>:t<task id>`; outside any task (the future of a
/// `block_on`, as under `#[tokio::main]`), the calling thread's, `<client id>:h<n>`: the
/// owner id of an async acquisition without an [`Owner`](crate::Owner) when the client
/// reenters per task, and what counts the locks a task holds outside any scope.
pub(crate) fn caller_owner(client_id: &str) -> String {
    match tokio::task::try_id() {
        Some(task) => format!("{client_id}:t{task}"),
        None => format!("{client_id}:h{}", thread_number()),
    }
}

/// This thread's number in the process: drawn once per thread, never given to another.
fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}
