'use strict';
// Redisson-style clients and native rlock waiters contending on the same keys.
//
// W workers use node-redisson (a Node.js port of Redisson's RLock: its Lua scripts, and a
// wait on the pub/sub channel `redisson_lock__channel:{key}`), each with a `Redisson`
// instance of its own: `tryLock(waitMs, leaseMs)`, hold, `unlock()`, in a loop. W workers use
// the module's commands, each on an ioredis connection of its own:
// `LOCK.ACQUIRE key owner LEASE leaseMs WAIT waitMs`, hold, `LOCK.RELEASE key owner`. Worker
// i of each side works on key i % K. After SECS seconds no worker starts a new attempt; the
// script prints one JSON report on stdout once every worker has finished. An attempt that
// ends after SECS is not counted (the worker's `late`).
//
// Overlaps are counted in this process: per key a count of current holders, raised when an
// acquisition returns and lowered just before the release is sent; above 1 is an overlap.
//
// Usage: node contend.js URL [--keys K] [--workers W] [--redisson-workers N]
//          [--native-workers N] [--wait-ms MS] [--lease-ms MS] [--hold-ms MS] [--secs S]
//          [--key-prefix P] [--as-shipped] [--summary FILE]
// URL (or $RLOCK_URL): redis://host:port[/db]. --workers sets both sides' counts. --summary
// also writes the figures a test checks to FILE, one tab-separated line each (`summaryLines`).
//
// node-redisson 1.0.4 differs from Redisson in two ways that cut a wait short whatever the
// server does, and by default this script corrects both (--as-shipped keeps the library as
// it is):
// - `tryLock` subtracts the whole time waited so far from its budget again at each wake-up
//   (its start time is never moved on), so after a few dozen wake-ups that lost the race it
//   returns false long before `waitMs`. Corrected from outside: `tryLock` is called again
//   with the time left until `waitMs` has passed (`RedissonWorker.acquire`).
// - each wait for the channel arms a timer that is never cleared: when a message ends the
//   wait, the timer still fires later and unsubscribes the channel for the whole connection,
//   so a later wait of the same worker hears nothing. Corrected by replacing the worker's
//   wait with the same wait that clears its timer (`fixStaleTimer`).

const { Redisson } = require('node-redisson');
const Redis = require('ioredis');
const { parseArgs, redisOptions } = require('./options');
const { report, summaryLines, round, waitFigures } = require('./report');

// The wait node-redisson 1.0.4 ships, with its timer cleared when a message comes first.
function fixStaleTimer(executor) {
  const timeout = require('node-redisson/dist/contracts/ICommandExecutor').SYMBOL_TIMEOUT;
  executor.waitSubscribeOnce = function (eventName, ms) {
    return new Promise((resolve) => {
      let timer = null;
      const handler = async (e) => {
        if (timer) clearTimeout(timer);
        await this.unsubscribe(eventName, handler);
        resolve(e);
      };
      if (ms) {
        timer = setTimeout(async () => {
          await this.unsubscribe(eventName, handler);
          resolve(timeout);
        }, ms);
      }
      this.subscribeOnce(eventName, handler).catch(() => {});
    });
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

// What every worker shares: the holder counts, the overlaps, the errors.
class Shared {
  constructor(opts) {
    this.opts = opts;
    this.holders = new Map();
    this.overlaps = 0;
    this.errors = 0;
    this.errorSamples = [];
    this.end = 0;
  }
  acquired(key) {
    const n = (this.holders.get(key) || 0) + 1;
    this.holders.set(key, n);
    if (n > 1) this.overlaps += 1;
  }
  releasing(key) {
    this.holders.set(key, (this.holders.get(key) || 0) - 1);
  }
  error(side, e) {
    this.errors += 1;
    const text = `${side}: ${e && e.message ? e.message : String(e)}`;
    if (this.errorSamples.length < 10 && !this.errorSamples.includes(text)) {
      this.errorSamples.push(text);
    }
  }
}

class Worker {
  constructor(side, index, shared) {
    const { keys, keyPrefix } = shared.opts;
    this.side = side;
    this.index = index;
    this.key = `${keyPrefix}:${index % keys}`;
    this.shared = shared;
    this.waits = [];
    this.timeoutWaits = [];
    this.late = 0;
  }
  get acquisitions() {
    return this.waits.length;
  }
  get timeouts() {
    return this.timeoutWaits.length;
  }
  async run() {
    const { holdMs } = this.shared.opts;
    while (nowMs() < this.shared.end) {
      const start = nowMs();
      let got;
      try {
        got = await this.acquire();
      } catch (e) {
        this.shared.error(this.side, e);
        await sleep(10);
        continue;
      }
      const waited = nowMs() - start;
      // An attempt that ends after the run is not counted: once one side has stopped, the
      // other has the keys to itself.
      const late = start + waited >= this.shared.end;
      if (late) this.late += 1;
      else (got ? this.waits : this.timeoutWaits).push(waited);
      if (!got) continue;
      this.shared.acquired(this.key);
      if (holdMs > 0) await sleep(holdMs);
      this.shared.releasing(this.key);
      try {
        await this.release();
      } catch (e) {
        this.shared.error(this.side, e);
      }
    }
  }
  report() {
    const sorted = this.waits.slice().sort((a, b) => a - b);
    return {
      side: this.side,
      worker: this.index,
      key: this.key,
      acquisitions: this.acquisitions,
      timeouts: this.timeouts,
      late: this.late,
      wait_ms: waitFigures(sorted),
      timeout_waits_ms: {
        min: this.timeoutWaits.length ? round(Math.min(...this.timeoutWaits)) : null,
        max: this.timeoutWaits.length ? round(Math.max(...this.timeoutWaits)) : null,
      },
    };
  }
}

class RedissonWorker extends Worker {
  constructor(index, shared) {
    super('redisson', index, shared);
    const { url, asShipped } = shared.opts;
    this.redisson = new Redisson({ redis: { options: redisOptions(url) } });
    if (!asShipped) fixStaleTimer(this.redisson.commandExecutor);
    this.lock = this.redisson.getLock(this.key);
  }
  async ready() {
    await this.redisson.redis.ping();
    await this.redisson.commandExecutor.subscribeRedis.ping();
  }
  async acquire() {
    const { waitMs, leaseMs, asShipped } = this.shared.opts;
    if (asShipped) return this.lock.tryLock(waitMs, leaseMs);
    const deadline = nowMs() + waitMs;
    for (;;) {
      const left = Math.ceil(deadline - nowMs());
      if (left <= 0) return false;
      if (await this.lock.tryLock(left, leaseMs)) return true;
    }
  }
  release() {
    return this.lock.unlock();
  }
  close() {
    return this.redisson.quit();
  }
}

class NativeWorker extends Worker {
  constructor(index, shared) {
    super('native', index, shared);
    this.redis = new Redis(redisOptions(shared.opts.url));
    this.owner = `native-${process.pid}-${index}`;
  }
  ready() {
    return this.redis.ping();
  }
  async acquire() {
    const { waitMs, leaseMs } = this.shared.opts;
    const reply = await this.redis.call(
      'LOCK.ACQUIRE', this.key, this.owner, 'LEASE', String(leaseMs), 'WAIT', String(waitMs));
    return reply !== null;
  }
  async release() {
    const reply = await this.redis.call('LOCK.RELEASE', this.key, this.owner);
    if (reply !== 0) throw new Error(`LOCK.RELEASE replied ${JSON.stringify(reply)}`);
  }
  close() {
    return this.redis.quit();
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const shared = new Shared(opts);
  const redisson = [];
  const native = [];
  for (let i = 0; i < opts.redissonWorkers; i++) redisson.push(new RedissonWorker(i, shared));
  for (let i = 0; i < opts.nativeWorkers; i++) native.push(new NativeWorker(i, shared));
  const workers = [...redisson, ...native];
  // A promise no worker awaits that fails (a connection lost under a pending call) is
  // an error of the run; once the connections are being closed it no longer matters.
  let closing = false;
  process.on('unhandledRejection', (e) => {
    if (!closing) shared.error('process', e);
  });
  let timer;
  const noAnswer = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from ${opts.url} within 10 s`)), 10000);
  });
  await Promise.race([Promise.all(workers.map((w) => w.ready())), noAnswer]);
  clearTimeout(timer);
  const start = nowMs();
  shared.end = start + opts.secs * 1000;
  await Promise.all(workers.map((w) => w.run()));
  const elapsed = nowMs() - start;
  const figures = report(opts, shared, redisson, native, elapsed);
  if (opts.summary) require('fs').writeFileSync(opts.summary, summaryLines(figures));
  const text = JSON.stringify(figures, null, 2);
  closing = true;
  await Promise.allSettled(workers.map((w) => w.close()));
  // Timers node-redisson left armed would keep the process alive for up to `waitMs`.
  process.stdout.write(`${text}\n`, () => process.exit(0));
}

main().catch((e) => {
  process.stderr.write(`contend.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(2);
});
