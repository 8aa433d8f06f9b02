/**
 * The client side: one key per logical operation, the same through every retry and hedge of it.
 * Retrying a POST with a fresh key on each attempt is the classic duplicate-charge bug.
 */
import type { Context, Operation } from '../core/context.js';
import type { ExecuteOptions, Policy } from '../core/policy.js';
import { storeKey } from '../core/validate.js';
import { canonicalJson, sha256Hex } from './json-codec.js';

/**
 * A deterministic idempotency key: the SHA-256 (hex) of the canonical JSON of `parts`, so the same
 * parts give the same key in every process and after a restart. Use what identifies the operation
 * (`'charge', orderId, attemptOfTheUser`), never a timestamp or a random value (a retry would get
 * a new key and run again). Throws a `TypeError` when a part is not JSON.
 *
 * @example
 * const key = await idempotencyKey('charge', order.id);
 */
export function idempotencyKey(...parts: readonly unknown[]): Promise<string> {
  if (parts.length === 0) throw new TypeError('expected at least one part for idempotencyKey()');
  return sha256Hex(canonicalJson(parts));
}

/** What an operation run through {@link withIdempotencyKey} receives: the policy's context and the key. */
export interface KeyedContext extends Context {
  /** The one key of this logical call: send it as the `Idempotency-Key` header. */
  readonly idempotencyKey: string;
}

/** Options of a keyed call: the policy's own, and the key. */
export interface KeyedExecuteOptions extends ExecuteOptions {
  /** The call's key. @default a random UUID, made once per call (never per attempt) */
  readonly idempotencyKey?: string | undefined;
}

/** A policy whose calls carry one idempotency key through every attempt. */
export interface KeyedPolicy<Extra> {
  execute<T>(
    operation: (context: KeyedContext) => Promise<T> | T,
    options?: KeyedExecuteOptions,
  ): Promise<T | Extra>;
}

/**
 * Wraps `policy` so that each call gets one idempotency key, the same in every retry, hedge and
 * attempt of that call: `context.idempotencyKey`. The key is the call's `idempotencyKey` option
 * (e.g. from {@link idempotencyKey}) or a random UUID made once for the call.
 *
 * @example
 * const post = withIdempotencyKey(pipeline(retry({ maxAttempts: 3 }), timeout(2_000)));
 * await post.execute(({ signal, idempotencyKey }) =>
 *   fetch(url, { method: 'POST', body, signal, headers: { 'Idempotency-Key': idempotencyKey } }),
 * );
 */
export function withIdempotencyKey<Extra>(policy: Policy<Extra>): KeyedPolicy<Extra> {
  if (typeof (policy as Partial<Policy<Extra>> | null)?.execute !== 'function') {
    throw new TypeError('expected "policy" to be a policy (an object with execute)');
  }
  return {
    execute<T>(operation: (context: KeyedContext) => Promise<T> | T, options?: KeyedExecuteOptions) {
      const given = options?.idempotencyKey;
      const idempotencyKey = given === undefined ? crypto.randomUUID() : storeKey('idempotencyKey', given);
      // A getter, not a copy: a context whose signal is made only when read stays lazy.
      const keyed: Operation<T> = (context) =>
        operation({
          get signal() {
            return context.signal;
          },
          attempt: context.attempt,
          deadline: context.deadline,
          idempotencyKey,
        });
      const { idempotencyKey: _key, ...rest } = options ?? {};
      return policy.execute(keyed, rest);
    },
  };
}
