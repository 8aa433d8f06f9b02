/**
 * Admission throughput on 100k no-op items at concurrency 16, in one process and run:
 * `mapConcurrent` vs p-map, p-limit and a hand-rolled 16-worker loop; `bulkhead` with a deep
 * queue (every item submitted at once, 10k and 100k queued) vs cockatiel 3.x `bulkhead`.
 * Prints items/s and the ratio ours ÷ peer (higher is better for us), plus items/s outside GC
 * pauses: holding 100k pending promises at once costs the runtime GC time whatever the queue
 * (see the bare semaphore floor), and that figure isolates the queue's own per-item cost.
 */

import { PerformanceObserver } from 'node:perf_hooks';
import { bulkhead, mapConcurrent } from 'bulwark';
import { bulkhead as cBulkhead } from 'cockatiel';
import pLimit from 'p-limit';
import pMap from 'p-map';
import { machine, table } from './support.js';

const CONCURRENCY = 16;
const noop = async (x: number) => x;

/** The baseline: the fastest plain-JS way to do it, no features. */
async function handRolled<T, R>(items: readonly T[], fn: (item: T) => Promise<R>, concurrency: number) {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

/**
 * The floor for the bulkhead "flood" case: a bare semaphore over a linked list, no abort, no
 * timeout, no events. Holding n pending promises at once costs the runtime (GC) the same for any
 * queue, so this shows how much of the 100k slowdown is the runtime's rather than the queue's.
 */
class BareSemaphore {
  private active = 0;
  private head: { resolve: () => void; next: unknown } | undefined;
  private tail: { resolve: () => void; next: unknown } | undefined;
  constructor(private readonly max: number) {}
  run<T>(op: () => Promise<T>): Promise<T> {
    if (this.active < this.max) {
      this.active++;
      return op().then(this.done);
    }
    return new Promise<void>((resolve) => {
      const node = { resolve, next: undefined };
      if (this.tail === undefined) this.head = node;
      else this.tail.next = node;
      this.tail = node;
    }).then(() => op().then(this.done));
  }
  private readonly done = <T>(value: T): T => {
    const node = this.head;
    if (node === undefined) this.active--;
    else {
      this.head = node.next as typeof node | undefined;
      if (this.head === undefined) this.tail = undefined;
      node.resolve();
    }
    return value;
  };
}

interface Batch {
  readonly name: string;
  /** Items per run. */
  readonly items: number;
  readonly run: () => Promise<unknown>;
  /** Fewer samples for the slow (quadratic) peers. */
  readonly slow?: boolean;
}

interface Rate {
  readonly name: string;
  readonly items: number;
  /** Median wall time of one batch, ns. */
  readonly batchNs: number;
  readonly perSecond: number;
  /** Share of the wall time spent in GC pauses. */
  readonly gcShare: number;
  /** Items/s counting only time outside GC pauses: the cost of the code itself. */
  readonly perSecondOutsideGc: number;
}

/** GC pauses seen by the process (start time and duration, ms). */
const pauses: { start: number; duration: number }[] = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) pauses.push({ start: entry.startTime, duration: entry.duration });
});

/** GC pause time within [from, to]. */
function gcWithin(from: number, to: number): number {
  let total = 0;
  for (const p of pauses) if (p.start >= from && p.start <= to) total += p.duration;
  return total;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/**
 * Runs whole batches (a batch is far longer than a timer tick, so wall time per batch is precise
 * enough) and reports median items/s, with and without GC pauses: holding 100k pending calls at
 * once costs any queue GC time that 10k do not, and the second figure shows the queue's own cost.
 */
async function rate(batch: Batch): Promise<Rate> {
  await batch.run(); // warm-up
  const windows: { from: number; to: number }[] = [];
  const minRuns = batch.slow ? 2 : 8;
  const spent = () => windows.reduce((sum, w) => sum + (w.to - w.from), 0);
  while (windows.length < minRuns || (!batch.slow && spent() < 1_000 && windows.length < 50)) {
    const from = performance.now();
    await batch.run();
    windows.push({ from, to: performance.now() });
  }
  // GC entries are delivered asynchronously.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const walls = windows.map((w) => w.to - w.from);
  const gcs = windows.map((w) => gcWithin(w.from, w.to));
  const wall = median(walls);
  const outside = median(walls.map((t, i) => t - gcs[i]!));
  const gcTotal = gcs.reduce((a, b) => a + b, 0);
  return {
    name: batch.name,
    items: batch.items,
    batchNs: wall * 1e6,
    perSecond: batch.items / (wall / 1e3),
    gcShare: gcTotal / walls.reduce((a, b) => a + b, 0),
    perSecondOutsideGc: batch.items / (outside / 1e3),
  };
}

function perSecond(value: number): string {
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)} M/s`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)} k/s`;
  return `${value.toFixed(0)} /s`;
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** Submits `n` calls at once to `execute` and waits for all: the queue is n − 16 deep. */
function flood(n: number, execute: (op: () => Promise<number>) => Promise<number>): () => Promise<unknown> {
  const op = () => noop(1);
  return () => {
    const calls = new Array<Promise<number>>(n);
    for (let i = 0; i < n; i++) calls[i] = execute(op);
    return Promise.all(calls);
  };
}

export default async function admission(): Promise<string> {
  const items = range(100_000);
  const batches: Batch[] = [
    {
      name: 'bulwark mapConcurrent',
      items: items.length,
      run: () => mapConcurrent(items, noop, { concurrency: CONCURRENCY }),
    },
    {
      name: 'bulwark mapConcurrent (generator source)',
      items: items.length,
      run: () => mapConcurrent(items.values(), noop, { concurrency: CONCURRENCY }),
    },
    { name: 'p-map', items: items.length, run: () => pMap(items, noop, { concurrency: CONCURRENCY }) },
    {
      name: 'p-limit',
      items: items.length,
      run: () => {
        const limit = pLimit(CONCURRENCY);
        return Promise.all(items.map((x) => limit(() => noop(x))));
      },
    },
    {
      name: 'hand-rolled 16-worker loop',
      items: items.length,
      run: () => handRolled(items, noop, CONCURRENCY),
    },
  ];
  for (const n of [10_000, 100_000]) {
    const ours = bulkhead({ maxConcurrent: CONCURRENCY, maxQueue: n });
    const oursTimed = bulkhead({ maxConcurrent: CONCURRENCY, maxQueue: n, queueTimeoutMs: 60_000 });
    const peer = cBulkhead(CONCURRENCY, n);
    const floor = new BareSemaphore(CONCURRENCY);
    batches.push(
      { name: `bare semaphore (floor), ${n / 1000}k queued`, items: n, run: flood(n, (op) => floor.run(op)) },
      { name: `bulwark bulkhead, ${n / 1000}k queued`, items: n, run: flood(n, (op) => ours.execute(op)) },
      {
        name: `bulwark bulkhead + queueTimeoutMs, ${n / 1000}k queued`,
        items: n,
        run: flood(n, (op) => oursTimed.execute(op)),
      },
      {
        name: `cockatiel bulkhead, ${n / 1000}k queued`,
        items: n,
        run: flood(n, (op) => peer.execute(op)),
        slow: n > 10_000,
      },
    );
  }

  const rates: Rate[] = [];
  gcObserver.observe({ entryTypes: ['gc'] });
  try {
    for (const batch of batches) rates.push(await rate(batch));
  } finally {
    gcObserver.disconnect();
  }
  const find = (name: string) => rates.find((r) => r.name === name)!;
  const ratio = (a: string, b: string) => (find(a).perSecond / find(b).perSecond).toFixed(2);
  const ratioOutsideGc = (a: string, b: string) =>
    (find(a).perSecondOutsideGc / find(b).perSecondOutsideGc).toFixed(2);

  const perCase = table(
    ['case', 'items per run', 'median run', 'items/s', 'GC share', 'items/s outside GC pauses'],
    rates.map((r) => [
      r.name,
      String(r.items),
      `${(r.batchNs / 1e6).toFixed(2)} ms`,
      perSecond(r.perSecond),
      `${(r.gcShare * 100).toFixed(0)} %`,
      perSecond(r.perSecondOutsideGc),
    ]),
  );
  const ratios = table(
    ['comparison (items/s ours ÷ other)', 'ratio', 'target'],
    [
      ['mapConcurrent ÷ p-map', ratio('bulwark mapConcurrent', 'p-map'), '≥ 3'],
      ['mapConcurrent ÷ p-limit', ratio('bulwark mapConcurrent', 'p-limit'), '—'],
      ['mapConcurrent ÷ hand-rolled loop', ratio('bulwark mapConcurrent', 'hand-rolled 16-worker loop'), '—'],
      [
        'bulkhead ÷ cockatiel bulkhead, 100k queued',
        ratio('bulwark bulkhead, 100k queued', 'cockatiel bulkhead, 100k queued'),
        '≥ 10',
      ],
      [
        'bulkhead ÷ cockatiel bulkhead, 10k queued',
        ratio('bulwark bulkhead, 10k queued', 'cockatiel bulkhead, 10k queued'),
        '—',
      ],
      [
        'bulkhead 100k ÷ bulkhead 10k, wall time',
        ratio('bulwark bulkhead, 100k queued', 'bulwark bulkhead, 10k queued'),
        '≈ 1 (see GC share)',
      ],
      [
        'bulkhead 100k ÷ bulkhead 10k, outside GC pauses (O(1) per item)',
        ratioOutsideGc('bulwark bulkhead, 100k queued', 'bulwark bulkhead, 10k queued'),
        '≈ 1',
      ],
      [
        'bare semaphore (floor) 100k ÷ 10k, wall time',
        ratio('bare semaphore (floor), 100k queued', 'bare semaphore (floor), 10k queued'),
        '—',
      ],
      [
        'bulkhead + queueTimeoutMs 100k ÷ 10k, outside GC pauses',
        ratioOutsideGc(
          'bulwark bulkhead + queueTimeoutMs, 100k queued',
          'bulwark bulkhead + queueTimeoutMs, 10k queued',
        ),
        '≈ 1',
      ],
      [
        'cockatiel 100k ÷ cockatiel 10k, outside GC pauses',
        ratioOutsideGc('cockatiel bulkhead, 100k queued', 'cockatiel bulkhead, 10k queued'),
        '—',
      ],
    ],
  );
  const report = `### Admission throughput (no-op items, concurrency ${CONCURRENCY})\n\n${machine()}\n\n${perCase}\n\n${ratios}\n`;
  console.log(report);
  return report;
}
