import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { pipeline } from '../core/pipeline.js';
import { bulkhead } from './bulkhead.js';

/**
 * The promises created per call while `run` makes `n` calls and they settle (the difference
 * between two runs, so the fixed cost cancels out).
 * Promise hooks make the count exact (every native promise, the runtime's own included).
 */
async function promisesPerCall(run: (n: number) => Promise<unknown>): Promise<number> {
  const n = 1_000;
  let created = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') created++;
    },
  });
  const base = async (count: number) => {
    hook.enable();
    created = 0;
    await run(count);
    hook.disable();
    return created;
  };
  const small = await base(10);
  const large = await base(10 + n);
  return (large - small) / n;
}

/** Runs `n` async calls behind one that holds the slot until all are submitted. */
function queueBehindHeld(
  execute: (op: () => Promise<number>) => Promise<number>,
  n: number,
): Promise<unknown> {
  let open!: () => void;
  const held = execute(
    () =>
      new Promise<number>((resolve) => {
        open = () => resolve(0);
      }),
  );
  const calls: Promise<number>[] = [];
  for (let i = 0; i < n; i++) calls.push(execute(async () => i));
  open();
  return Promise.all([held, ...calls]);
}

/** A bulkhead whose slots are never all busy: the cost of an admitted call, for comparison. */
const roomy = () => bulkhead({ maxConcurrent: 1_000_000, maxQueue: 0 });

// A queued call costs what an admitted one costs plus the caller's own promise and the runtime's
// adopting the call's promise into it: no admission promise, no reaction waiting for admission.
describe('bulkhead: a queued call costs one promise more than an admitted one', () => {
  it('execute', async () => {
    const b = bulkhead({ maxConcurrent: 1, maxQueue: 100_000, queueTimeoutMs: 60_000 });
    const queued = await promisesPerCall((n) => queueBehindHeld((op) => b.execute(op), n));
    const direct = roomy();
    const admitted = await promisesPerCall((n) => queueBehindHeld((op) => direct.execute(op), n));
    expect(queued).toBeLessThanOrEqual(admitted + 2);
  });

  it('pipeline', async () => {
    const p = pipeline(bulkhead({ maxConcurrent: 1, maxQueue: 100_000 }));
    const queued = await promisesPerCall((n) => queueBehindHeld((op) => p.execute(op), n));
    const direct = pipeline(roomy());
    const admitted = await promisesPerCall((n) => queueBehindHeld((op) => direct.execute(op), n));
    expect(queued).toBeLessThanOrEqual(admitted + 2);
  });
});
