/**
 * One client operation as a well-behaved client performs it: the same `Idempotency-Key` on every
 * attempt, a retry after a timeout, a 409, a 429 or a 5xx (waiting what `Retry-After` says, capped),
 * and, for some operations, an abort half-way.
 */
import { type Random, systemClock } from '../../src/index.js';
import type { LoadRecorder } from './stats.js';

/** One logical operation. */
export interface Operation {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly tenant: string;
  readonly body?: unknown;
  /** Sent as `Idempotency-Key` on every attempt. */
  readonly key?: string;
  /** The client gives up the whole operation after this long (an abort), without retrying. */
  readonly abortAfterMs?: number;
}

/** How the client behaves. */
export interface ClientOptions {
  readonly baseUrl: string;
  /** Each attempt's limit. @default 1_000 */
  readonly timeoutMs?: number;
  /** Attempts per operation. @default 4 */
  readonly maxAttempts?: number;
  /** The longest `Retry-After` the client honours, in ms. @default 500 */
  readonly maxRetryAfterMs?: number;
  readonly random: Random;
  readonly recorder: LoadRecorder;
}

const retryable = (status: number) => status === 409 || status === 429 || status >= 500;

async function attempt(options: ClientOptions, operation: Operation, signal: AbortSignal) {
  const headers: Record<string, string> = { 'x-tenant': operation.tenant };
  if (operation.body !== undefined) headers['content-type'] = 'application/json';
  if (operation.key !== undefined) headers['idempotency-key'] = operation.key;
  const response = await fetch(options.baseUrl + operation.path, {
    method: operation.method,
    headers,
    signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs ?? 1_000)]),
    ...(operation.body === undefined ? {} : { body: JSON.stringify(operation.body) }),
  });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: Number(response.headers.get('retry-after') ?? '0') };
}

/**
 * Performs `operation` with retries; records every attempt and the operation in
 * `options.recorder`. Never rejects.
 *
 * @example
 * await perform({ baseUrl, random, recorder }, { method: 'GET', path: '/accounts/acct-1', tenant: 't1' });
 */
export async function perform(options: ClientOptions, operation: Operation): Promise<void> {
  const { random, recorder, maxAttempts = 4, maxRetryAfterMs = 500 } = options;
  const started = systemClock.now();
  const abort = new AbortController();
  const abortTimer =
    operation.abortAfterMs === undefined
      ? undefined
      : setTimeout(() => abort.abort(), operation.abortAfterMs);
  let succeeded = false;
  try {
    for (let tries = 1; tries <= maxAttempts; tries++) {
      let waitMs = 30 + random() * 100;
      try {
        const { status, retryAfter } = await attempt(options, operation, abort.signal);
        recorder.attempt(status);
        if (status < 400) {
          succeeded = true;
          break;
        }
        if (!retryable(status)) break;
        waitMs = Math.max(waitMs, Math.min(retryAfter * 1_000, maxRetryAfterMs));
      } catch (error) {
        if (abort.signal.aborted) {
          recorder.attempt('aborted');
          return;
        }
        recorder.attempt((error as Error).name === 'TimeoutError' ? 'timeout' : 'network');
      }
      await systemClock.sleep(waitMs);
    }
    recorder.operation(succeeded, systemClock.now() - started);
  } finally {
    clearTimeout(abortTimer);
  }
}
