/**
 * Idempotency keys: the same request sent twice (a client's retry, a duplicate delivery) runs its
 * handler once, and every duplicate gets the stored result. Claim → execute → complete (or release
 * on failure), every step atomic in the store, the claim held by a short renewed lease and the
 * result kept for a separate, long retention.
 */
import { classify } from '../core/classify.js';
import { isStoreUnavailableError, StoreUnavailableError } from '../core/errors.js';
import type { Disposer, Listener } from '../core/events.js';
import { isPermanentKind } from '../core/kind.js';
import { LeaseKeeper } from '../core/lease-keeper.js';
import { PollingWait, type Watch } from '../core/polling-wait.js';
import { storeKey } from '../core/validate.js';
import { IdempotencyConflictError, IdempotencyInProgressError, LeaseLostError } from './errors.js';
import { IdempotencyEvents } from './events.js';
import { HandlerContext, type IdempotentHandler } from './handler.js';
import { canonicalJson, sha256Hex } from './json-codec.js';
import { memoryIdempotencyStore } from './memory-store.js';
import {
  type ConflictEvent,
  type IdempotencyOptions,
  type IdempotencyStoreErrorEvent,
  type LeaseLostEvent,
  type ReadIdempotencyOptions,
  type ReplayEvent,
  readIdempotencyOptions,
} from './options.js';
import type { ClaimResult, IdempotencyStore } from './store.js';
import { failureRecord, readRecord, valueRecord } from './stored-record.js';

/** Options of one call. */
export interface IdempotentCallOptions {
  /** Cancels the call: a wait for another request, or the handler (then the key is released). */
  readonly signal?: AbortSignal | undefined;
}

/** A result and whether it was replayed (the handler did not run for this call). */
export interface IdempotentOutcome<T> {
  readonly value: T;
  readonly replayed: boolean;
}

/** An `idempotency()` instance. */
export interface Idempotency<Tx = undefined> {
  /** The `name` option: names the instance in its events. */
  readonly name: string;
  /**
   * Runs `handler` once per `key`: claims the key for `request`'s fingerprint, runs the handler
   * with a renewed lease, stores its result and returns it; a later call with the same key and
   * request returns the stored result without running the handler (a replay).
   *
   * Rejects with `IdempotencyConflictError` when the key was used for another request,
   * `IdempotencyInProgressError` when a request with the key is still running (`wait: false`, or
   * after `maxWaitMs`), `StoreUnavailableError` when the store cannot claim (the handler does not
   * run), `LeaseLostError` when the lease was lost while the handler ran (even if it resolved), a
   * `TypeError` for a bad key or a request or result that is not JSON, and with the handler's own
   * error when it fails (the key is then released, so a retry runs again, unless `storeErrors`
   * kept the failure).
   */
  execute<T>(
    key: string,
    request: unknown,
    handler: IdempotentHandler<T, Tx>,
    options?: IdempotentCallOptions,
  ): Promise<T>;
  /** {@link execute}, also saying whether the value was replayed (e.g. for `Idempotent-Replayed`). */
  run<T>(
    key: string,
    request: unknown,
    handler: IdempotentHandler<T, Tx>,
    options?: IdempotentCallOptions,
  ): Promise<IdempotentOutcome<T>>;
  /** Subscribes to replays; returns a disposer. */
  onReplay(listener: Listener<ReplayEvent>): Disposer;
  /** Subscribes to keys reused for another request; returns a disposer. */
  onConflict(listener: Listener<ConflictEvent>): Disposer;
  /** Subscribes to leases lost while a handler ran; returns a disposer. */
  onLeaseLost(listener: Listener<LeaseLostEvent>): Disposer;
  /** Subscribes to `complete`/`release` failures the call survived; returns a disposer. */
  onStoreError(listener: Listener<IdempotencyStoreErrorEvent>): Disposer;
}

/** The SHA-256 fingerprint of `value`'s canonical JSON (64 hex digits). */
export function fingerprintOf(value: unknown): Promise<string> {
  return sha256Hex(canonicalJson(value));
}

class IdempotencyImpl<Tx> implements Idempotency<Tx> {
  readonly name: string;
  private readonly store: IdempotencyStore<unknown>;
  private readonly events: IdempotencyEvents;
  private readonly watch: Watch | undefined; // the store's, bound

  constructor(private readonly o: ReadIdempotencyOptions) {
    this.name = o.name;
    this.store = o.store ?? memoryIdempotencyStore({ clock: o.clock });
    this.watch = this.store.watch?.bind(this.store);
    this.events = new IdempotencyEvents(o);
  }

  async execute<T>(
    key: string,
    request: unknown,
    handler: IdempotentHandler<T, Tx>,
    options?: IdempotentCallOptions,
  ) {
    return (await this.run(key, request, handler, options)).value;
  }

  async run<T>(
    key: string,
    request: unknown,
    handler: IdempotentHandler<T, Tx>,
    options?: IdempotentCallOptions,
  ): Promise<IdempotentOutcome<T>> {
    storeKey('key', key);
    if (typeof handler !== 'function') throw new TypeError('expected "handler" to be a function');
    const signal = options?.signal;
    const fingerprint = await fingerprintOf(
      this.o.fingerprint ? this.o.fingerprint(request as never) : request,
    );
    let wait: PollingWait | undefined;
    try {
      for (;;) {
        signal?.throwIfAborted();
        const sentAt = this.o.clock.now();
        const claim = await this.claim(key, fingerprint);
        switch (claim.status) {
          case 'claimed':
            if (signal?.aborted) {
              await this.settleFailure(key, claim.token, signal.reason);
              throw signal.reason;
            }
            return { value: await this.runOwned(key, claim.token, sentAt, handler, signal), replayed: false };
          case 'completed':
            this.events.replay(key);
            return { value: readRecord(claim.result) as T, replayed: true };
          case 'mismatch':
            throw this.events.conflict(key, new IdempotencyConflictError(key), true);
          default: {
            if (!this.o.wait) throw this.inProgress(key, claim.retryAfterMs);
            wait ??= new PollingWait(this.watch, key, this.o.clock, this.o.clock.now() + this.o.maxWaitMs);
            if (wait.remaining() === 0) throw this.inProgress(key, claim.retryAfterMs);
            await wait.next(claim.retryAfterMs, signal);
          }
        }
      }
    } finally {
      wait?.close();
    }
  }

  private async claim(key: string, fingerprint: string): Promise<ClaimResult> {
    try {
      return await this.store.claim(key, fingerprint, this.o.leaseMs);
    } catch (error) {
      throw isStoreUnavailableError(error)
        ? error
        : new StoreUnavailableError(
            `idempotency store failed to claim: ${String((error as Error)?.message ?? error)}`,
            error,
          );
    }
  }

  /** Runs the handler on a claimed key; `claimedAt` is when the claim was sent (the lease began after). */
  private async runOwned<T>(
    key: string,
    token: string,
    claimedAt: number,
    handler: IdempotentHandler<T, Tx>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const lease = new LeaseKeeper<'complete-refused'>({
      leaseMs: this.o.leaseMs,
      clock: this.o.clock,
      sentAt: claimedAt,
      signal,
      renew: () => this.store.renew(key, token, this.o.leaseMs),
      lostError: (cause) => new LeaseLostError(key, cause),
      onLost: (reason) => this.events.lost(key, reason),
    });
    let value: T;
    try {
      value = this.o.transactional
        ? await this.store.transaction!((tx) => this.runInTransaction(key, token, handler, lease, tx as Tx))
        : await handler(new HandlerContext(lease, undefined as Tx));
    } catch (error) {
      lease.stop();
      if (lease.lost !== undefined) throw lease.error(error);
      await this.settleFailure(key, token, error);
      throw error;
    }
    lease.stop();
    if (this.o.transactional) return value;
    if (lease.lost !== undefined) throw lease.error();
    let record: string;
    try {
      record = valueRecord(value);
    } catch (error) {
      await this.settleFailure(key, token, error);
      throw error;
    }
    let stored: boolean;
    try {
      stored = await this.store.complete(key, token, record, this.o.ttlMs);
    } catch (error) {
      // The work is done and its result is correct: return it. The key stays claimed until its
      // lease ends; a retry after that runs the handler again (docs/idempotency.md).
      this.events.storeError(key, 'complete', error);
      return value;
    }
    if (!stored) {
      lease.lose('complete-refused');
      throw lease.error();
    }
    return value;
  }

  private async runInTransaction<T>(
    key: string,
    token: string,
    handler: IdempotentHandler<T, Tx>,
    lease: LeaseKeeper<'complete-refused'>,
    tx: Tx,
  ): Promise<T> {
    const value = await handler(new HandlerContext(lease, tx));
    lease.stop();
    if (lease.lost !== undefined) throw lease.error();
    const record = valueRecord(value);
    if (!(await this.store.complete(key, token, record, this.o.ttlMs, tx))) {
      lease.lose('complete-refused');
      throw lease.error();
    }
    return value;
  }

  /** After a failed handler: store a permanent failure `storeErrors` chose to keep, else release. */
  private async settleFailure(key: string, token: string, error: unknown): Promise<void> {
    const kind = classify(error);
    const keep =
      isPermanentKind(kind) && this.o.storeErrors !== undefined && this.o.storeErrors(error) === true;
    try {
      if (keep) await this.store.complete(key, token, failureRecord(error, kind), this.o.ttlMs);
      else await this.store.release(key, token);
    } catch (storeError) {
      // Never mask the handler's own error with the store's.
      this.events.storeError(key, keep ? 'complete' : 'release', storeError);
    }
  }

  /** A duplicate refused while the first request is in progress: counted, returned to throw. */
  private inProgress(key: string, retryAfterMs: number): Error {
    return this.events.conflict(key, new IdempotencyInProgressError(key, retryAfterMs), false);
  }

  onReplay(listener: Listener<ReplayEvent>): Disposer {
    return this.events.replayed.add(listener);
  }
  onConflict(listener: Listener<ConflictEvent>): Disposer {
    return this.events.conflicted.add(listener);
  }
  onLeaseLost(listener: Listener<LeaseLostEvent>): Disposer {
    return this.events.leaseLost.add(listener);
  }
  onStoreError(listener: Listener<IdempotencyStoreErrorEvent>): Disposer {
    return this.events.storeFailed.add(listener);
  }
}

/**
 * Idempotency keys: `execute(key, request, handler)` runs `handler` once per key and replays its
 * stored result to every duplicate. In memory by default; pass `store` (Redis, PostgreSQL) to
 * share keys between processes. Throws a `TypeError` naming a bad or unknown option.
 *
 * @example
 * const payments = idempotency({ store: redisStores(redis).idempotency });
 * const receipt = await payments.execute(request.headers['idempotency-key'], request.body, ({ signal }) =>
 *   charge(request.body, { signal }),
 * );
 */
export function idempotency<Tx>(
  options: IdempotencyOptions<Tx> & { readonly transactional: true },
): Idempotency<Tx>;
export function idempotency(options?: IdempotencyOptions<unknown>): Idempotency;
export function idempotency(options?: IdempotencyOptions<unknown>): Idempotency<unknown> {
  return new IdempotencyImpl(readIdempotencyOptions(options));
}
