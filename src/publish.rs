//! The release message (SPEC.md §4): `0` on the lock's channel when it becomes free.

use redis_module::raw;

use crate::channel::{release_channel, RELEASE_MESSAGE};
use crate::config::{self, PublishMode, CHANNEL_PREFIX};
use crate::error::LockError;
use crate::store::{api, OwnedString};

/// Publishes Redisson's unlock message for `key`, as `rlock.publish` says.
pub fn release_message(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<(), LockError> {
    let mode = config::publish_mode();
    if mode == PublishMode::none {
        return Ok(());
    }
    let channel = CHANNEL_PREFIX.with(|prefix| release_channel(prefix, key));
    let channel = OwnedString::new(ctx, &channel)?;
    let message = OwnedString::new(ctx, RELEASE_MESSAGE)?;
    let publish = match mode {
        PublishMode::spublish => api!(RedisModule_PublishMessageShard),
        _ => api!(RedisModule_PublishMessage),
    };
    unsafe { publish(ctx, channel.0, message.0) };
    Ok(())
}
