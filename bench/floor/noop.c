#include "redismodule.h"
/* NOOP.KEYED key: opens nothing, replies 1 (a module command's own cost). */
static int Noop(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    return RedisModule_ReplyWithLongLong(ctx, 1);
}
int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv; (void)argc;
    if (RedisModule_Init(ctx, "noop", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_CreateCommand(ctx, "noop.keyed", Noop, "write fast", 1, 1, 1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
