#include <stdio.h>
#include "redismodule.h"
/* The floors of the hot commands' table: what Redis charges a module command, and a wait
 * handed on, before a module does anything of its own.
 *   NOOP.KEYED key   opens nothing, replies 1 (a module command's own cost).
 *   NOOP.BLOCK key   blocks the caller (RedisModule_BlockClient, no timeout) at the end of
 *                    one queue shared by every key; replied 1 when passed. Replies 1 at
 *                    once instead if the last pass on key found nobody blocked (as a lock
 *                    left free is taken).
 *   NOOP.PASS key    unblocks the oldest blocked caller (RedisModule_UnblockClient);
 *                    replies 1, or 0 when nobody was blocked (key is then left free).
 *   NOOP.QUEUE key   queues a ticket of the caller at the end of one queue shared by every
 *                    key; replies [queued, id].
 *   NOOP.PUSH key    ends the oldest ticket on key (tickets of other keys before it are
 *                    dropped): publishes "<id> 1" to its caller's channel (__rlock__:<client
 *                    id>, as the lock's tickets); replies 0.
 * A waiter that sends NOOP.PASS then NOOP.BLOCK in turn (NOOP.PUSH then NOOP.QUEUE) is a
 * handoff with nothing held.
 *   NOOP.HOLD key owner LEASE ms   the module API calls of an uncontended LOCK.ACQUIRE and
 *                    nothing else: the hash written (owner 1, @token n), the lease as
 *                    the key's TTL, the holding replicated as one command, the key signalled,
 *                    the hset and expire events; replies the token. No checks: the key must
 *                    be free.
 *   NOOP.FREE key owner   those of the LOCK.RELEASE that frees it: the owner's count and the
 *                    token read, the key deleted, signalled, the del event, the command
 *                    replicated verbatim, the release message published; replies 0.
 *   NOOP.APPLY ...   does nothing (what NOOP.HOLD replicates).
 *   NOOP.FENCED lock owner token command [arg ...]   the module API calls of LOCK.FENCED and
 *                    nothing else: the owner's count and the token read, the command's keys
 *                    asked for, the command run as the caller with its effects replicated,
 *                    its reply forwarded. No checks: it runs whatever the lock holds.
 * NOOP.HOLD and NOOP.FREE are the least any module can cost that keeps the lock's contract
 * through the module API. */
#define QUEUE 65536
static RedisModuleBlockedClient *blocked[QUEUE];
static unsigned long long head, tail;
static struct { unsigned long long client, id, key; } tickets[QUEUE];

/* The key's name as a number (FNV-1a): which queue a ticket is on. */
static unsigned long long KeyOf(RedisModuleString *key) {
    size_t len;
    const char *bytes = RedisModule_StringPtrLen(key, &len);
    unsigned long long h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)bytes[i]) * 1099511628211ULL;
    return h;
}
static unsigned long long first, next_id;
/* The key a pass found nobody to hand on to, if any: the next NOOP.BLOCK on it goes on. */
static unsigned long long free_key;
static int key_free;

static int Noop(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    return RedisModule_ReplyWithLongLong(ctx, 1);
}
static int Passed(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    return RedisModule_ReplyWithLongLong(ctx, 1);
}
static int Block(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    if (key_free && free_key == KeyOf(argv[1])) {
        key_free = 0;
        return RedisModule_ReplyWithLongLong(ctx, 1);
    }
    if (tail - head >= QUEUE) return RedisModule_ReplyWithError(ctx, "ERR the queue is full");
    blocked[tail++ % QUEUE] = RedisModule_BlockClient(ctx, Passed, NULL, NULL, 0);
    return REDISMODULE_OK;
}
static int Pass(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    if (head == tail) {
        free_key = KeyOf(argv[1]);
        key_free = 1;
        return RedisModule_ReplyWithLongLong(ctx, 0);
    }
    RedisModule_UnblockClient(blocked[head++ % QUEUE], NULL);
    return RedisModule_ReplyWithLongLong(ctx, 1);
}
static int Queue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    if (next_id - first >= QUEUE) return RedisModule_ReplyWithError(ctx, "ERR the queue is full");
    tickets[next_id % QUEUE].key = KeyOf(argv[1]);
    tickets[next_id % QUEUE].client = RedisModule_GetClientId(ctx);
    tickets[next_id % QUEUE].id = next_id;
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithSimpleString(ctx, "queued");
    return RedisModule_ReplyWithLongLong(ctx, (long long)next_id++);
}
static int Push(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    unsigned long long key = KeyOf(argv[1]);
    while (first != next_id && tickets[first % QUEUE].key != key) first++;
    if (first == next_id) return RedisModule_ReplyWithLongLong(ctx, 0);
    char channel[48], message[48];
    int c = snprintf(channel, sizeof channel, "__rlock__:%llu", tickets[first % QUEUE].client);
    int m = snprintf(message, sizeof message, "%llu 1", tickets[first % QUEUE].id);
    first++;
    RedisModuleString *ch = RedisModule_CreateString(ctx, channel, (size_t)c);
    RedisModuleString *msg = RedisModule_CreateString(ctx, message, (size_t)m);
    RedisModule_PublishMessage(ctx, ch, msg);
    RedisModule_FreeString(ctx, ch);
    RedisModule_FreeString(ctx, msg);
    return RedisModule_ReplyWithLongLong(ctx, 0);
}
static RedisModuleString *one, *token_field, *released;
static long long tokens;

static int Hold(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    long long lease;
    if (argc != 5) return RedisModule_WrongArity(ctx);
    if (RedisModule_StringToLongLong(argv[4], &lease) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR LEASE must be a number of ms");
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    long long token = ++tokens, deadline = (long long)RedisModule_Milliseconds() + lease;
    RedisModuleString *t = RedisModule_CreateStringFromLongLong(ctx, token);
    RedisModuleString *d = RedisModule_CreateStringFromLongLong(ctx, deadline);
    RedisModule_HashSet(key, REDISMODULE_HASH_NONE, argv[2], one, token_field, t, NULL);
    RedisModule_SetAbsExpire(key, deadline);
    RedisModule_Replicate(ctx, "NOOP.APPLY", "sssss", argv[1], argv[2], one, t, d);
    RedisModule_SignalModifiedKey(ctx, argv[1]);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hset", argv[1]);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "expire", argv[1]);
    RedisModule_CloseKey(key);
    RedisModule_FreeString(ctx, t);
    RedisModule_FreeString(ctx, d);
    return RedisModule_ReplyWithLongLong(ctx, token);
}
static int Free(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 3) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModuleString *count = NULL, *token = NULL;
    RedisModule_HashGet(key, REDISMODULE_HASH_NONE, argv[2], &count, token_field, &token, NULL);
    if (count) RedisModule_FreeString(ctx, count);
    if (token) RedisModule_FreeString(ctx, token);
    RedisModule_DeleteKey(key);
    RedisModule_SignalModifiedKey(ctx, argv[1]);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "del", argv[1]);
    RedisModule_ReplicateVerbatim(ctx);
    size_t len;
    const char *name = RedisModule_StringPtrLen(argv[1], &len);
    char channel[256];
    int c = snprintf(channel, sizeof channel, "redisson_lock__channel:{%.*s}", (int)len, name);
    RedisModuleString *ch = RedisModule_CreateString(ctx, channel, (size_t)c);
    RedisModule_PublishMessage(ctx, ch, released);
    RedisModule_FreeString(ctx, ch);
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithLongLong(ctx, 0);
}
static int Fenced(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 5) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    RedisModuleString *count = NULL, *token = NULL;
    RedisModule_HashGet(key, REDISMODULE_HASH_NONE, argv[2], &count, token_field, &token, NULL);
    if (count) RedisModule_FreeString(ctx, count);
    if (token) RedisModule_FreeString(ctx, token);
    RedisModule_CloseKey(key);
    int nkeys = 0, *flags = NULL;
    int *keys = RedisModule_GetCommandKeysWithFlags(ctx, argv + 4, argc - 4, &nkeys, &flags);
    if (keys) RedisModule_Free(keys);
    if (flags) RedisModule_Free(flags);
    const char *name = RedisModule_StringPtrLen(argv[4], NULL);
    RedisModuleCallReply *reply = RedisModule_Call(ctx, name, "!CM0v", argv + 5, (size_t)(argc - 5));
    if (!reply) return RedisModule_ReplyWithError(ctx, "ERR the command could not run");
    RedisModule_ReplyWithCallReply(ctx, reply);
    RedisModule_FreeCallReply(reply);
    return REDISMODULE_OK;
}
static int Apply(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    return RedisModule_ReplyWithLongLong(ctx, 1);
}
int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    if (RedisModule_Init(ctx, "noop", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.keyed", Noop, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.block", Block, "write", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.pass", Pass, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.queue", Queue, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.push", Push, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.hold", Hold, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.free", Free, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.fenced", Fenced, "write deny-oom", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.apply", Apply, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    tokens = (long long)RedisModule_Milliseconds() * 1000; /* as many digits as rlock's */
    one = RedisModule_CreateString(NULL, "1", 1);
    token_field = RedisModule_CreateString(NULL, "@token", 6);
    released = RedisModule_CreateString(NULL, "0", 1);
    return REDISMODULE_OK;
}
