-- Redisson RLock renewExpiration: KEYS[1] = lock; ARGV[1] = lease ms, ARGV[2] = owner.
-- 1 when renewed, else 0.
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
