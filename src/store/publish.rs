//! The release message (SPEC.md §4): `0` on the lock's channel when it becomes free; and
//! how many connections listen on that channel (script clients waiting for it).

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

/// The release channel of `key`.
fn channel_of(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<OwnedString, LockError> {
    CHANNEL.with(|channel| {
        let mut channel = channel.borrow_mut();
        CHANNEL_PREFIX.with(|prefix| write_release_channel(&mut channel, prefix, key));
        OwnedString::new(ctx, &channel)
    })
}

/// Publishes Redisson's unlock message for `key`, as `rlock.publish` says.
pub fn release_message(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<(), LockError> {
    static MESSAGE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    let mode = config::publish_mode();
    if mode == PublishMode::none {
        return Ok(());
    }
    let channel = channel_of(ctx, key)?;
    let message = kept(&MESSAGE, RELEASE_MESSAGE)?;
    let publish = match mode {
        PublishMode::spublish => api!(RedisModule_PublishMessageShard),
        _ => api!(RedisModule_PublishMessage),
    };
    unsafe { publish(ctx, channel.0, message) };
    Ok(())
}

/// How many connections of this node are subscribed to the release channel of `key` (the
/// shard channel under `rlock.publish spublish`): script clients waiting for its release.
/// 0 when nothing is published, or when the server does not say.
pub fn listeners(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<usize, LockError> {
    let subcommand = match config::publish_mode() {
        PublishMode::none => return Ok(0),
        PublishMode::spublish => c"SHARDNUMSUB",
        PublishMode::publish => c"NUMSUB",
    };
    let (call, free) = (api!(RedisModule_Call), api!(RedisModule_FreeCallReply));
    let (element, integer) = (
        api!(RedisModule_CallReplyArrayElement),
        api!(RedisModule_CallReplyInteger),
    );
    let channel = channel_of(ctx, key)?;
    // `PUBSUB NUMSUB channel` answers [channel, count]; it only reads the server's tables.
    let reply = unsafe {
        call(
            ctx,
            c"PUBSUB".as_ptr(),
            c"cs".as_ptr(),
            subcommand.as_ptr(),
            channel.0,
        )
    };
    if reply.is_null() {
        return Ok(0);
    }
    let count = unsafe { element(reply, 1) };
    let count = if count.is_null() {
        0
    } else {
        unsafe { integer(count) }
    };
    unsafe { free(reply) };
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The channel Redisson's read-write lock clients wait on.
const RW_CHANNEL_PREFIX: &[u8] = b"redisson_rwlock";

/// Publishes the release of the read-write lock `key` on `redisson_rwlock:{key}`, as
/// `rlock.publish` says: `1`, the message on which Redisson wakes all its waiters of the
/// lock (readers and writers alike; each then tries again).
pub fn rw_release_message(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> Result<(), LockError> {
    static MESSAGE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
    let mode = config::publish_mode();
    if mode == PublishMode::none {
        return Ok(());
    }
    let channel = CHANNEL.with(|channel| {
        let mut channel = channel.borrow_mut();
        write_release_channel(&mut channel, RW_CHANNEL_PREFIX, key);
        OwnedString::new(ctx, &channel)
    })?;
    let message = kept(&MESSAGE, b"1")?;
    let publish = match mode {
        PublishMode::spublish => api!(RedisModule_PublishMessageShard),
        _ => api!(RedisModule_PublishMessage),
    };
    unsafe { publish(ctx, channel.0, message) };
    Ok(())
}

/// Publishes `message` on `channel` (a holder's loss channel) with `PUBLISH`, which a
/// cluster carries to every node: a shard channel would have to hash to a slot of this
/// node, and the owner's channel does not.
pub fn loss_message(
    ctx: *mut raw::RedisModuleCtx,
    channel: &[u8],
    message: &[u8],
) -> Result<(), LockError> {
    let publish = api!(RedisModule_PublishMessage);
    let channel = OwnedString::new(ctx, channel)?;
    let message = OwnedString::new(ctx, message)?;
    unsafe { publish(ctx, channel.0, message.0) };
    Ok(())
}
