//! The server's module API, checked once at load: the module refuses to load, with a log
//! line naming the function, on a server that lacks one it calls, instead of failing later
//! in a command, a timer or an event. `tests/containment.rs` checks that every
//! `RedisModule_*` function the sources name is listed here.
//!
//! Used only where the server has it: `RedisModule_SetCommandACLCategories` (Redis 7.2+,
//! the commands' ACL categories), `RedisModule_GetUsedMemoryRatio` (the gate's memory
//! check: without it, the `deny-oom` of `LOCK.ACQUIRE` is the only one),
//! `RedisModule_GetCurrentUserName` and `RedisModule_GetClientUserNameById` (the ACL user of
//! a ticket's sender and receiver: without them, `LOCK.WAIT ... TO` names only the caller
//! itself, and only a wait's sender or receiver may cancel it), `RedisModule_GetServerVersion`,
//! `RedisModule_GetModuleOptionsAll`, `RedisModule_GetServerInfo`,
//! `RedisModule_ServerInfoGetFieldC` and `RedisModule_FreeServerInfo` (whether the server is
//! Valkey 9, with atomic slot migration: without them, it is taken as not). `RedisModule_OnLoad` is the
//! module's entry point, and `RedisModule_Init` fills in the API before the check.

use redis_module::raw;

/// Lists the module API functions the module needs: [`missing`] finds the first this
/// server does not export.
macro_rules! required {
    ($($name:ident),* $(,)?) => {
        /// The first function the module needs that this server does not export, if any.
        pub fn missing() -> Option<&'static str> {
            $(
                if unsafe { raw::$name }.is_none() {
                    return Some(stringify!($name));
                }
            )*
            None
        }
    };
}

required!(
    // Memory, strings, logging (the allocator and `redis_module::raw` helpers use some).
    RedisModule_Alloc,
    RedisModule_Free,
    RedisModule_Log,
    RedisModule_CreateString,
    RedisModule_FreeString,
    RedisModule_StringPtrLen,
    // Loading: commands, configs, data type, info, events.
    RedisModule_CreateCommand,
    RedisModule_GetCommand,
    RedisModule_SetCommandInfo,
    RedisModule_RegisterNumericConfig,
    RedisModule_RegisterStringConfig,
    RedisModule_RegisterEnumConfig,
    RedisModule_LoadConfigs,
    RedisModule_CreateDataType,
    RedisModule_RegisterInfoFunc,
    RedisModule_InfoAddSection,
    RedisModule_InfoAddFieldLongLong,
    RedisModule_SetModuleOptions,
    RedisModule_SubscribeToKeyspaceEvents,
    RedisModule_SubscribeToServerEvent,
    // RDB aux field.
    RedisModule_SaveSigned,
    RedisModule_LoadSigned,
    RedisModule_IsIOError,
    // Keys.
    RedisModule_OpenKey,
    RedisModule_CloseKey,
    RedisModule_KeyType,
    RedisModule_ValueLength,
    RedisModule_HashGet,
    RedisModule_HashSet,
    RedisModule_DeleteKey,
    RedisModule_GetExpire,
    RedisModule_SetAbsExpire,
    RedisModule_GetAbsExpire,
    RedisModule_ScanCursorCreate,
    RedisModule_ScanCursorDestroy,
    RedisModule_ScanKey,
    RedisModule_Scan,
    RedisModule_SelectDb,
    RedisModule_GetSelectedDb,
    RedisModule_NotifyKeyspaceEvent,
    RedisModule_SignalModifiedKey,
    // Replication, pub/sub, the server's state.
    RedisModule_Replicate,
    RedisModule_ReplicateVerbatim,
    RedisModule_PublishMessage,
    RedisModule_PublishMessageShard,
    RedisModule_GetContextFlags,
    RedisModule_AvoidReplicaTraffic,
    RedisModule_Milliseconds,
    RedisModule_Call,
    RedisModule_CallReplyType,
    RedisModule_CallReplyStringPtr,
    RedisModule_CallReplyArrayElement,
    RedisModule_FreeCallReply,
    RedisModule_ReplyWithCallReply,
    RedisModule_IsKeysPositionRequest,
    RedisModule_KeyAtPosWithFlags,
    RedisModule_GetCommandKeysWithFlags,
    // Replies.
    RedisModule_WrongArity,
    RedisModule_ReplyWithError,
    RedisModule_ReplyWithLongLong,
    RedisModule_ReplyWithNull,
    RedisModule_ReplyWithSimpleString,
    RedisModule_ReplyWithStringBuffer,
    RedisModule_ReplyWithMap,
    RedisModule_ReplyWithArray,
    RedisModule_CallReplyInteger,
    // Blocked clients and timers.
    RedisModule_BlockClient,
    RedisModule_UnblockClient,
    RedisModule_SetDisconnectCallback,
    RedisModule_GetBlockedClientHandle,
    RedisModule_GetBlockedClientPrivateData,
    RedisModule_CreateTimer,
    RedisModule_StopTimer,
    // Tickets: their receivers.
    RedisModule_GetClientId,
    RedisModule_GetClientInfoById,
);
