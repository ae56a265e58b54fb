//! Containment: nothing a client sends, and no bug, may take Redis down.
//!
//! Every function Redis calls (`RedisModule_OnLoad`, commands, timers, keyspace and server
//! events, the `INFO` section, RDB aux fields, configs, blocked clients' replies and frees)
//! runs its body inside [`entry`], the one `catch_unwind` of the module: a panic (a bug)
//! becomes a log line and a fallback value. [`command`] and [`callback`] are its two common
//! shapes. A panic hook logs the panic through Redis's own log.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use redis_module::logging;

use rlock_core::error::LockError;
use rlock_core::reply::Reply;

/// Runs the body of a function Redis calls; a panic is logged and `fallback` returned.
pub fn entry<T>(name: &'static str, fallback: T, body: impl FnOnce() -> T) -> T {
    contain(name, body, || fallback)
}

/// Runs `body`; a panic is logged and `fallback()` returned.
fn contain<T>(name: &'static str, body: impl FnOnce() -> T, fallback: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            logging::log_warning(format!("rlock: {name}: internal error (panic caught)"));
            fallback()
        }
    }
}

/// Runs a command body; a panic becomes an `ERR internal` error (made only then: an error
/// made for every call and dropped would cost a call of its drop glue).
pub fn command(
    name: &'static str,
    body: impl FnOnce() -> Result<Reply, LockError>,
) -> Result<Reply, LockError> {
    contain(name, body, || Err(LockError::Internal(name)))
}

/// Runs a callback that has nobody to reply to: errors and panics are logged.
pub fn callback(name: &'static str, body: impl FnOnce() -> Result<(), LockError>) {
    if let Err(e) = entry(name, Ok(()), body) {
        logging::log_warning(format!("rlock: {name}: {e}"));
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
