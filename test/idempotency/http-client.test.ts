/**
 * The client side of idempotency keys over real HTTP: a local server behind idempotencyMiddleware,
 * and a client POSTing through `withIdempotencyKey(pipeline(retry(...), timeout(...)))` with
 * `Idempotency-Key: context.idempotencyKey`. The first attempt's response is lost (the server
 * handles it, but holds its answer until the retry arrives, so the client's per-attempt timeout
 * always aborts the first fetch, however loaded the machine); the retry, with the same key, gets
 * the replayed response and the charge runs once. The contrast: a fresh key per attempt (the
 * classic duplicate-charge bug) runs it twice.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ResilienceError } from '../../src/core/errors.js';
import { fromHttpStatus } from '../../src/core/http-status.js';
import { pipeline } from '../../src/core/pipeline.js';
import { idempotencyMiddleware } from '../../src/http/idempotency.js';
import { idempotency } from '../../src/idempotency/idempotency.js';
import { withIdempotencyKey } from '../../src/idempotency/key.js';
import { constant } from '../../src/retry/backoff.js';
import { retry } from '../../src/retry/retry.js';
import { timeout } from '../../src/timeout/timeout.js';
import { listen } from '../support/http-server.js';

/** Long enough for any attempt that gets an answer; the first never does before it times out. */
const ATTEMPT_TIMEOUT_MS = 1_000;

/**
 * A payment server: each run of the route is one charge (the side effect counted). The first
 * charge answers only when a second request reaches the server, which is after the client gave
 * up on the first attempt; later charges answer at once.
 */
async function paymentServer() {
  const charges: string[] = [];
  let requests = 0;
  let answerFirst: (() => void) | undefined;
  const mw = idempotencyMiddleware({ idempotency: idempotency() });
  const server = createServer((req, res) => {
    requests += 1;
    if (requests === 2) answerFirst?.();
    mw(req, res, (error?: unknown) => {
      if (error !== undefined) {
        res.writeHead(500).end();
        return;
      }
      const id = `ch_${charges.length + 1}`;
      charges.push(id);
      const answer = (): void => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ charge: id, body: String((req as { body?: unknown }).body) }));
      };
      if (charges.length === 1 && requests === 1) answerFirst = answer;
      else answer();
    });
  });
  return { url: (await listen(server)).url, charges };
}

/** One POST; a non-2xx answer is an error of its status's kind (so a 409 or 5xx is retried alike). */
async function charge(url: string, key: string, signal: AbortSignal) {
  const res = await fetch(`${url}/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ amount: 100 }),
    signal,
  });
  if (!res.ok) {
    throw new ResilienceError(`POST /charges: ${res.status}`, {
      code: 'ERR_UPSTREAM',
      kind: fromHttpStatus(res.status),
    });
  }
  const body = (await res.json()) as { charge: string; body: string };
  return { ...body, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

const policy = () => pipeline(retry({ maxAttempts: 3, backoff: constant(10) }), timeout(ATTEMPT_TIMEOUT_MS));

describe('idempotency keys end to end: client retries against idempotencyMiddleware', () => {
  it('one key through every attempt: the lost first response is replayed, the charge runs once', async () => {
    const { url, charges } = await paymentServer();
    const attempts: number[] = [];
    const post = withIdempotencyKey(policy());
    const result = await post.execute(({ signal, attempt, idempotencyKey }) => {
      attempts.push(attempt);
      return charge(url, idempotencyKey, signal);
    });
    console.log(`same key on every attempt: ${attempts.length} attempts, ${charges.length} charge(s)`);
    expect(attempts).toEqual([1, 2]);
    expect(result).toEqual({ charge: 'ch_1', body: '{"amount":100}', replayed: true });
    expect(charges).toEqual(['ch_1']);
  });

  it('contrast: a fresh key per attempt charges twice', async () => {
    const { url, charges } = await paymentServer();
    const attempts: number[] = [];
    const result = await policy().execute(({ signal, attempt }) => {
      attempts.push(attempt);
      return charge(url, crypto.randomUUID(), signal);
    });
    console.log(`fresh key per attempt: ${attempts.length} attempts, ${charges.length} charge(s)`);
    expect(attempts).toEqual([1, 2]);
    expect(result).toMatchObject({ charge: 'ch_2', replayed: false });
    expect(charges).toEqual(['ch_1', 'ch_2']);
  });
});
