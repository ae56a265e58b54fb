'use strict';
// The command line of contend.js (see its usage) and the ioredis options for its URL.

function parseArgs(argv) {
  const opts = {
    url: process.env.RLOCK_URL || '',
    keys: 2,
    redissonWorkers: 4,
    nativeWorkers: 4,
    waitMs: 3000,
    leaseMs: 10000,
    holdMs: 2,
    secs: 20,
    keyPrefix: 'contend',
    asShipped: false,
    summary: null,
  };
  const numbers = {
    '--keys': 'keys',
    '--redisson-workers': 'redissonWorkers',
    '--native-workers': 'nativeWorkers',
    '--wait-ms': 'waitMs',
    '--lease-ms': 'leaseMs',
    '--hold-ms': 'holdMs',
    '--secs': 'secs',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--as-shipped') {
      opts.asShipped = true;
    } else if (arg === '--summary') {
      opts.summary = argv[++i];
    } else if (arg === '--key-prefix') {
      opts.keyPrefix = argv[++i];
    } else if (arg === '--workers') {
      const n = Number(argv[++i]);
      opts.redissonWorkers = n;
      opts.nativeWorkers = n;
    } else if (numbers[arg]) {
      opts[numbers[arg]] = Number(argv[++i]);
    } else if (!arg.startsWith('--') && !opts.urlGiven) {
      opts.url = arg;
      opts.urlGiven = true;
    } else {
      throw new Error(`unknown argument ${JSON.stringify(arg)}`);
    }
  }
  delete opts.urlGiven;
  if (!opts.url) throw new Error('no server URL: give redis://host:port or set RLOCK_URL');
  for (const name of Object.values(numbers)) {
    if (!Number.isFinite(opts[name]) || opts[name] < 0) throw new Error(`bad --${name}`);
  }
  if (opts.keys < 1) throw new Error('--keys must be at least 1');
  return opts;
}

// ioredis options for one server, from redis://[user:password@]host:port[/db].
function redisOptions(url) {
  const u = new URL(url);
  const options = { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
  if (u.password) options.password = decodeURIComponent(u.password);
  if (u.username) options.username = decodeURIComponent(u.username);
  const db = u.pathname.replace('/', '');
  if (db) options.db = Number(db);
  return options;
}

module.exports = { parseArgs, redisOptions };
