//! Containment: nothing a client sends may take Redis down.
//!
//! Every command handler and every callback Redis calls runs inside [`command`] or
//! [`callback`], which catch a panic (a bug) and turn it into an error reply or a log line.
//! A panic hook logs the panic through Redis's own log.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use redis_module::logging;

use crate::error::LockError;
use crate::reply::Reply;

/// Runs a command body; a panic becomes an `ERR internal` error.
pub fn command(
    name: &'static str,
    body: impl FnOnce() -> Result<Reply, LockError>,
) -> Result<Reply, LockError> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(Err(LockError::Internal(name)))
}

/// Runs a callback that has nobody to reply to: errors and panics are logged.
pub fn callback(name: &'static str, body: impl FnOnce() -> Result<(), LockError>) {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => logging::log_warning(format!("rlock: {name}: {e}")),
        Err(_) => logging::log_warning(format!("rlock: {name}: internal error (panic caught)")),
    }
}

/// Sends panic messages to the Redis log instead of stderr.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            logging::log_warning(format!("rlock: bug: {info}"));
        }));
    });
}
