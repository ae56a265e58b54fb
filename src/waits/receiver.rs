//! Who receives the outcome of a ticket (`LOCK.WAIT`): the connection `TO` names, which
//! reads its mailbox with `LOCK.GRANTS` (pull), or the caller itself, on its channel
//! (push, RESP3, subscribed).

use std::ffi::c_int;

use redis_module::raw;

use crate::host::ffi::{api, OwnedString};
use crate::host::node;
use crate::waits::tickets::{self, Delivery, Me};
use rlock_core::channel::GRANTS_PREFIX;
use rlock_core::error::LockError;

/// Who receives a ticket's outcome, and how.
#[derive(Debug, Clone, Copy)]
pub struct To {
    pub receiver: u64,
    pub delivery: Delivery,
}

/// Who gets the outcome of the ticket command `command`: the connection `TO` names (pull),
/// which must run as the caller's ACL user, or the caller (push), which must be able to see
/// it.
pub fn choose(
    ctx: *mut raw::RedisModuleCtx,
    me: &Me,
    to: Option<u64>,
    command: &'static str,
) -> Result<To, LockError> {
    if let Some(id) = to {
        let mut info: raw::RedisModuleClientInfo = unsafe { std::mem::zeroed() };
        info.version = 1;
        let client_info = api!(RedisModule_GetClientInfoById);
        let exists = unsafe { client_info((&raw mut info).cast(), id) };
        if exists != raw::REDISMODULE_OK as c_int {
            return Err(LockError::NoClient(id));
        }
        if !tickets::same_user(ctx, me, id) {
            return Err(LockError::ToOtherUser(id));
        }
        return Ok(To {
            receiver: id,
            delivery: Delivery::Pull,
        });
    }
    let flags = node::flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
        return Err(LockError::WaitNeedsTo(command, "inside a script"));
    }
    if node::is_cluster(ctx) {
        return Err(LockError::WaitNeedsTo(command, "in a cluster"));
    }
    if flags & raw::REDISMODULE_CTX_FLAGS_RESP3 == 0 {
        return Err(LockError::WaitNeedsResp3(command));
    }
    let id = me.id;
    if !tickets::subscribed(id, false) {
        if !has_subscriber(ctx, id)? {
            return Err(LockError::NotSubscribed(command, id));
        }
        tickets::subscribed(id, true);
    }
    Ok(To {
        receiver: id,
        delivery: Delivery::Push,
    })
}

/// Whether the channel of receiver `id` has a subscriber (`PUBSUB NUMSUB`), checked once
/// per connection.
fn has_subscriber(ctx: *mut raw::RedisModuleCtx, id: u64) -> Result<bool, LockError> {
    let call = api!(RedisModule_Call);
    let element = api!(RedisModule_CallReplyArrayElement);
    let integer = api!(RedisModule_CallReplyInteger);
    let free = api!(RedisModule_FreeCallReply);
    let channel = OwnedString::new(ctx, format!("{GRANTS_PREFIX}{id}").as_bytes())?;
    let reply = unsafe {
        call(
            ctx,
            c"PUBSUB".as_ptr(),
            c"cs".as_ptr(),
            c"NUMSUB".as_ptr(),
            channel.0,
        )
    };
    if reply.is_null() {
        return Ok(false);
    }
    let count = unsafe { integer(element(reply, 1)) };
    unsafe { free(reply) };
    Ok(count > 0)
}
