'use strict';
// The report of contend.js: per worker, per side, overlaps, errors, and the ratio of the mean
// native worker's acquisitions to the mean Redisson worker's.

// Nearest-rank percentiles of sorted milliseconds.
function waitFigures(sorted) {
  const rank = (p) => {
    if (sorted.length === 0) return null;
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return round(sorted[i]);
  };
  return { p50: rank(50), p99: rank(99), max: rank(100) };
}

const round = (x) => Math.round(x * 100) / 100;

function sideTotals(workers) {
  const all = workers.flatMap((w) => w.waits).sort((a, b) => a - b);
  const acquisitions = workers.reduce((n, w) => n + w.acquisitions, 0);
  return {
    workers: workers.length,
    acquisitions,
    timeouts: workers.reduce((n, w) => n + w.timeouts, 0),
    mean_acquisitions: workers.length ? round(acquisitions / workers.length) : null,
    wait_ms: waitFigures(all),
  };
}

function report(opts, shared, redisson, native, elapsed) {
  const r = sideTotals(redisson);
  const n = sideTotals(native);
  const ratio = r.mean_acquisitions ? round(n.mean_acquisitions / r.mean_acquisitions) : null;
  return {
    config: {
      keys: opts.keys,
      redisson_workers: opts.redissonWorkers,
      native_workers: opts.nativeWorkers,
      wait_ms: opts.waitMs,
      lease_ms: opts.leaseMs,
      hold_ms: opts.holdMs,
      secs: opts.secs,
      as_shipped: opts.asShipped,
    },
    elapsed_s: round(elapsed / 1000),
    workers: [...redisson, ...native].map((w) => w.report()),
    totals: { redisson: r, native: n },
    overlaps: shared.overlaps,
    errors: shared.errors,
    error_samples: shared.errorSamples,
    ratio,
  };
}

// `overlaps N`, `errors N`, `wait_limit_ms N`, then per worker
// `worker SIDE INDEX ACQUISITIONS TIMEOUTS MAX_WAIT_MS` (`-` when it acquired nothing).
function summaryLines(r) {
  const lines = [
    ['overlaps', r.overlaps],
    ['errors', r.errors],
    ['wait_limit_ms', r.config.wait_ms],
  ];
  for (const w of r.workers) {
    const max = w.wait_ms.max === null ? '-' : w.wait_ms.max;
    lines.push(['worker', w.side, w.worker, w.acquisitions, w.timeouts, max]);
  }
  return lines.map((fields) => `${fields.join('\t')}\n`).join('');
}

module.exports = { report, summaryLines, round, waitFigures };
