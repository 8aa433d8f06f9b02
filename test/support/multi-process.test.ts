import { expect, it } from 'vitest';
import { runWorkers, WorkerFailedError } from './multi-process.js';
import type { IncrInput, IncrResult } from './scenarios/incr.js';
import type { MisbehaveInput } from './scenarios/misbehave.js';
import { useRedis } from './services.js';

const redis = await useRedis();
const incr = new URL('./scenarios/incr.ts', import.meta.url);
const misbehave = new URL('./scenarios/misbehave.ts', import.meta.url);

redis.describe('runWorkers against real Redis', () => {
  it('4 workers × 250 INCR of one key add up to exactly 1000, all starting after the barrier', async () => {
    const input: IncrInput = {
      url: redis.url,
      key: redis.key('counter'),
      arrivedKey: redis.key('arrived'),
      times: 250,
    };
    const results = await runWorkers<IncrResult>({ entry: incr, workers: 4, input });

    const total = Number(await redis.admin().get(input.key));
    console.log(
      `multi-process INCR: total ${total}, per worker ${results.map((r) => r.incremented).join(' ')}`,
    );
    expect(total).toBe(1000);
    expect(results.map((r) => r.workerIndex)).toEqual([0, 1, 2, 3]);
    expect(results.map((r) => r.incremented)).toEqual([250, 250, 250, 250]);
    expect(results.map((r) => r.arrivedAtStart)).toEqual([4, 4, 4, 4]);
  });
});

function failure(mode: MisbehaveInput['mode'], timeoutMs?: number): Promise<unknown> {
  const input: MisbehaveInput = { mode, failing: 1 };
  return runWorkers({
    entry: misbehave,
    workers: 2,
    input,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  }).then(
    () => expect.unreachable('runWorkers should have rejected'),
    (error: unknown) => error,
  );
}

it('rejects with the thrown error and the worker output when a worker throws, killing the others', async () => {
  const error = await failure('throw');
  expect(error).toBeInstanceOf(WorkerFailedError);
  expect((error as WorkerFailedError).workerIndex).toBe(1);
  expect((error as Error).message).toMatch(/worker 1 threw Error: scenario failure in worker 1/);
  expect((error as Error).message).toContain('worker 1 is about to misbehave (throw)');
});

it('rejects when a worker exits non-zero', async () => {
  const error = await failure('exit');
  expect(error).toBeInstanceOf(WorkerFailedError);
  expect((error as Error).message).toMatch(/worker 1 exited with code 3/);
});

it('rejects when a worker exits 0 without a result', async () => {
  const error = await failure('silent-exit');
  expect((error as Error).message).toMatch(/worker 1 exited without reporting a result/);
});

it('rejects and kills every worker when the run exceeds timeoutMs', async () => {
  const error = await failure('hang', 1_500);
  expect(error).toBeInstanceOf(WorkerFailedError);
  expect((error as Error).message).toMatch(/timed out after 1500 ms; still running: workers 0, 1/);
});

it('rejects invalid options at once', () => {
  expect(() => runWorkers({ entry: misbehave, workers: 0 })).toThrow(TypeError);
});
