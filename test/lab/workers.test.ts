/**
 * The lab's multi-worker mode as an end-to-end test: each build in 4 worker processes on the real
 * Redis, PostgreSQL and NATS, one load spread over them. The bulwark build must keep every
 * invariant across processes (locks and fences on shared stores, one outbox relayed by four
 * relays, one JetStream consumer shared by four inboxes); the naive build must show the problem.
 * Counts from ground truth, never timings. Also: `--workers` with a service down fails at once,
 * saying which.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { check, invariants } from '../../lab/checks.js';
import { runLab } from '../../lab/scenario.js';
import { checkServices, serviceUrls } from '../../lab/services.js';
import { renderReport } from '../../lab/table.js';
import { requireServices } from '../support/services.js';

const services = serviceUrls(process.env);
const unavailable = await checkServices(services).then(
  () => undefined,
  (error: Error) => error.message,
);
if (unavailable !== undefined && !requireServices)
  console.warn(`SKIPPED test/lab/workers.test.ts: ${unavailable}`);

describe.skipIf(unavailable !== undefined && !requireServices)('the lab on 4 workers', () => {
  it('keeps every invariant with bulwark across processes, and charges twice without it', async () => {
    if (unavailable !== undefined) throw new Error(unavailable);
    const [bulwark, naive] = await runLab({
      durationMs: 3_000,
      seed: 2,
      clients: 12,
      noisyClients: 8,
      workers: 4,
      services,
    });
    const protectedFindings = check(bulwark!);
    console.log(renderReport([bulwark!, naive!]).text);

    expect(bulwark!.load.succeeded).toBeGreaterThan(50);
    expect(invariants(protectedFindings).filter((invariant) => !invariant.held)).toEqual([]);
    expect(protectedFindings).toMatchObject({ duplicateCharges: 0, lostEvents: 0, eventsHandledTwice: 0 });
    // The workers' series reached the runner: the requests they admitted, their breakers' changes.
    expect(bulwark!.series.counts.admitted.reduce((a, b) => a + b, 0)).toBeGreaterThan(50);
    const sources = new Set(bulwark!.series.breaker.map((mark) => mark.source));
    expect(sources.size).toBeGreaterThan(0);
    for (const source of sources) expect(source).toMatch(/^worker-[1-4]$/);

    const naiveFindings = check(naive!);
    expect(
      naiveFindings.duplicateCharges + naiveFindings.lostEvents + naiveFindings.accountsOff,
    ).toBeGreaterThan(0);
  }, 90_000);
});

it('refuses --workers at once when a service does not answer, naming it', async () => {
  const closed = { REDIS_URL: 'redis://127.0.0.1:1', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' };
  const run = promisify(execFile)('npx', ['tsx', 'lab/main.ts', '--workers', '4', '--duration', '1'], {
    env: { ...process.env, ...closed },
  });
  const failure = await run.then(
    () => undefined,
    (error: { code: number; stderr: string }) => error,
  );
  expect(failure?.code).toBe(2);
  expect(failure?.stderr).toContain('Redis at redis://127.0.0.1:1 does not answer');
  expect(failure?.stderr).toContain('set REDIS_URL');
  expect(failure?.stderr).toContain('PostgreSQL at postgres://postgres@127.0.0.1:1/test does not answer');
  expect(failure?.stderr).not.toContain('NATS');
}, 30_000);
