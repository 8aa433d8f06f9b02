/**
 * Quick start: a flaky local HTTP service, called through bulwark.
 *
 *   npm run quickstart
 *
 * The server answers 503 twice then 200 on /flaky, never answers in time on /slow, and 400 on
 * /bad. The client wraps fetch in timeout + retry (+ a fallback for /slow) and prints what happened.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { classify, exponentialJitter, fallback, pipeline, retry, timeout } from '../src/index.js';

let flakyCalls = 0;
const server = createServer((req, res) => {
  if (req.url === '/flaky') {
    flakyCalls++;
    if (flakyCalls <= 2) {
      res.writeHead(503, { 'retry-after': '0' }).end('busy');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ price: 42 }));
  } else if (req.url === '/slow') {
    const timer = setTimeout(() => res.end('too late'), 5_000);
    req.on('close', () => clearTimeout(timer));
  } else {
    res.writeHead(400).end('bad request');
  }
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** fetch that turns non-2xx answers into errors carrying the status (which classify() reads). */
async function getJson(path: string, signal: AbortSignal): Promise<unknown> {
  const res = await fetch(base + path, { signal });
  if (!res.ok)
    throw Object.assign(new Error(`GET ${path}: HTTP ${res.status}`), {
      status: res.status,
      headers: res.headers,
    });
  return res.json();
}

const retries = retry({
  maxAttempts: 4, // four attempts in all: the first call and up to three retries
  backoff: exponentialJitter({ baseMs: 50, maxMs: 500 }),
  onRetry: ({ attempt, delayMs, error }) =>
    console.log(`  attempt ${attempt} failed (${classify(error)}), retrying in ${delayMs.toFixed(0)} ms`),
});
const resilient = pipeline(timeout(2_000), retries, timeout(300));

console.log('GET /flaky — 503 twice, then 200:');
console.log('  →', await resilient.execute(({ signal }) => getJson('/flaky', signal)));

console.log('GET /bad — a 400 is not retried:');
await resilient
  .execute(({ signal }) => getJson('/bad', signal))
  .catch((error: Error) => console.log(`  → failed once: ${error.message} (kind ${classify(error)})`));

console.log('GET /slow — every attempt times out after 300 ms; the fallback answers:');
const withFallback = pipeline(
  fallback(() => ({ price: 40, stale: true })),
  resilient,
);
console.log('  →', await withFallback.execute(({ signal }) => getJson('/slow', signal)));

server.closeAllConnections();
server.close();
