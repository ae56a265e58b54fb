//! The release message (SPEC.md §4): `0` on the lock's channel when it becomes free.

use std::cell::RefCell;
use std::ptr;
use std::sync::atomic::AtomicPtr;

use redis_module::raw;

use crate::host::config::{self, PublishMode, CHANNEL_PREFIX};
use crate::host::ffi::{api, kept, OwnedString};
use rlock_core::channel::{write_release_channel, RELEASE_MESSAGE};
use rlock_core::error::LockError;

thread_local! {
    /// The channel name being built: its memory is reused from one release to the next.
    static CHANNEL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Publishes Redisson's unlock message for `key`, as `rlock.publish` says.
pub fn release_message(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<(), LockError> {
    static MESSAGE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    let mode = config::publish_mode();
    if mode == PublishMode::none {
        return Ok(());
    }
    let channel = CHANNEL.with(|channel| {
        let mut channel = channel.borrow_mut();
        CHANNEL_PREFIX.with(|prefix| write_release_channel(&mut channel, prefix, key));
        OwnedString::new(ctx, &channel)
    })?;
    let message = kept(&MESSAGE, RELEASE_MESSAGE)?;
    let publish = match mode {
        PublishMode::spublish => api!(RedisModule_PublishMessageShard),
        _ => api!(RedisModule_PublishMessage),
    };
    unsafe { publish(ctx, channel.0, message) };
    Ok(())
}
