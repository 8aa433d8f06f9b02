import type { IdempotencyStore } from '../../src/idempotency/store.js';

/**
 * A store that forwards `claim`, `complete`, `release` and `renew` to `store` (and nothing else: no
 * `watch`, no `transaction`), with `changes` in place of any of them: a test's way to make one
 * operation fail, hang or be counted while the rest behave.
 */
export function forwardingStore(
  store: IdempotencyStore,
  changes: Partial<IdempotencyStore> = {},
): IdempotencyStore {
  return {
    claim: (...a) => store.claim(...a),
    complete: (...a) => store.complete(...a),
    release: (...a) => store.release(...a),
    renew: (...a) => store.renew(...a),
    ...changes,
  };
}
