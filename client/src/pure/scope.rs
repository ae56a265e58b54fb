//! Reentrancy by scope: the holdings whose work a future runs (the work of `with_lock`, a
//! future in `Guard::scope`), where an acquisition of one of their locks by their client
//! reenters with their owner id; and which locks each task (or thread) holds outside any
//! scope, so that an acquisition that waits for a lock its own task holds is reported.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

tokio::task_local! {
    /// The innermost scope the polled future runs in.
    static SCOPE: Arc<Frame>;
}

/// One holding a scope runs for, and the scope around it.
#[derive(Debug)]
struct Frame {
    key: String,
    owner: String,
    outer: Option<Arc<Frame>>,
}

/// The owner id an acquisition of `key` by client `client_id` reenters with: that of the
/// innermost scope of a holding of `key` by that client the polled future runs in.
pub(crate) fn owner_in_scope(client_id: &str, key: &str) -> Option<String> {
    let found = SCOPE.try_with(|frame| {
        let mut at = Some(frame);
        while let Some(frame) = at {
            if frame.key == key && of_client(&frame.owner, client_id) {
                return Some(frame.owner.clone());
            }
            at = frame.outer.as_ref();
        }
        None
    });
    found.ok().flatten()
}

/// Whether `owner` is an owner id of client `client_id` (`<client id>:...`).
fn of_client(owner: &str, client_id: &str) -> bool {
    owner
        .strip_prefix(client_id)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// `work`, run in a scope of the holdings `(key, owner)` (inside the scopes it is polled in
/// already): acquisitions of those keys by the owners' clients in `work` reenter.
pub(crate) fn within<F: Future>(
    holdings: impl IntoIterator<Item = (String, String)>,
    work: F,
) -> impl Future<Output = F::Output> {
    let holdings: Vec<(String, String)> = holdings.into_iter().collect();
    async move {
        // The scopes it is polled in, read when it starts.
        let outer = SCOPE.try_with(Arc::clone).ok();
        let frame = holdings.into_iter().fold(outer, |outer, (key, owner)| {
            Some(Arc::new(Frame { key, owner, outer }))
        });
        match frame {
            Some(frame) => SCOPE.scope(frame, work).await,
            None => work.await,
        }
    }
}

/// The locks held outside any scope, by acquiring caller (a task's or a thread's tag, see
/// `per_thread::caller_owner`) and key: how many of their guards live.
static OUTSIDE: LazyLock<Mutex<HashMap<(String, String), usize>>> = LazyLock::new(Default::default);

fn outside() -> MutexGuard<'static, HashMap<(String, String), usize>> {
    OUTSIDE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether `caller` holds `key` through a guard it acquired outside any scope.
pub(crate) fn holds_outside(caller: &str, key: &str) -> bool {
    outside().contains_key(&(caller.to_owned(), key.to_owned()))
}

/// A guard acquired by `caller` outside any scope, counted until it is dropped.
#[derive(Debug)]
pub(crate) struct Outside {
    caller: String,
    key: String,
}

impl Outside {
    pub(crate) fn new(caller: String, key: &str) -> Outside {
        let at = (caller, key.to_owned());
        *outside().entry(at.clone()).or_insert(0) += 1;
        let (caller, key) = at;
        Outside { caller, key }
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let mut map = outside();
        let at = (
            std::mem::take(&mut self.caller),
            std::mem::take(&mut self.key),
        );
        if let Some(count) = map.get_mut(&at) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                map.remove(&at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(key: &str, owner: &str) -> (String, String) {
        (key.to_owned(), owner.to_owned())
    }

    #[tokio::test]
    async fn a_scope_names_its_owner_for_its_key_and_client_only() {
        assert_eq!(owner_in_scope("c", "k"), None);
        let inner = async {
            assert_eq!(owner_in_scope("c", "k").as_deref(), Some("c:1"));
            assert_eq!(owner_in_scope("c", "j").as_deref(), Some("c:2"));
            assert_eq!(owner_in_scope("d", "k"), None);
            assert_eq!(owner_in_scope("c", "other"), None);
        };
        let middle = within([pair("j", "c:2")], inner);
        within([pair("k", "c:1"), pair("x", "cc:3")], middle).await;
        assert_eq!(owner_in_scope("c", "k"), None);
        assert!(!of_client("cc:3", "c"));
    }

    #[tokio::test]
    async fn the_innermost_scope_of_a_key_wins() {
        let inner = within([pair("k", "c:2")], async { owner_in_scope("c", "k") });
        let got = within([pair("k", "c:1")], inner).await;
        assert_eq!(got.as_deref(), Some("c:2"));
    }

    #[test]
    fn guards_outside_any_scope_are_counted_until_dropped() {
        assert!(!holds_outside("t1", "k"));
        let first = Outside::new("t1".into(), "k");
        let second = Outside::new("t1".into(), "k");
        assert!(holds_outside("t1", "k"));
        assert!(!holds_outside("t2", "k"));
        drop(first);
        assert!(holds_outside("t1", "k"));
        drop(second);
        assert!(!holds_outside("t1", "k"));
    }
}
