import type { Context } from '../core/context.js';
import { GatedPolicy } from '../core/gate.js';
import { type Admission, Refusal } from '../core/gate-types.js';
import type { RejectedEvent } from '../core/policy-events.js';
import { positiveInteger } from '../core/validate.js';
import { ConcurrencyLimitError } from './errors.js';
import {
  type ConcurrencyLimitOptions,
  type ConcurrencyLimitRejection,
  readConcurrencyLimitOptions,
} from './options.js';

/** Emitted when a {@link concurrencyLimit} refuses a call: `{ policy, reason: 'limit-reached', error }`. */
export type ConcurrencyLimitRejectedEvent = RejectedEvent<ConcurrencyLimitRejection>;

/**
 * A concurrency limit policy: at most `max` calls in flight, the rest refused at once. Create one
 * with {@link concurrencyLimit}.
 */
export class ConcurrencyLimitPolicy extends GatedPolicy<ConcurrencyLimitRejection> {
  /** The most calls admitted at once. */
  readonly max: number;
  private active = 0;

  /** Use {@link concurrencyLimit}. */
  constructor(max: number, options?: ConcurrencyLimitOptions) {
    super('concurrency-limit');
    this.max = positiveInteger('max', max);
    const o = readConcurrencyLimitOptions(options);
    this.configure(o, o.clock);
  }

  /** Calls admitted and not yet settled. */
  get inFlight(): number {
    return this.active;
  }

  /** Takes a slot, or refuses with a {@link ConcurrencyLimitError} when all `max` are taken. */
  protected override admit(_context: Context): Admission<ConcurrencyLimitRejection> {
    if (this.active >= this.max) return new Refusal('limit-reached', new ConcurrencyLimitError(this.max));
    this.active++;
    return 0;
  }

  /** Frees the slot when the operation settles, however it ends. */
  protected override release(): void {
    this.active--;
  }
}

/**
 * Admits at most `max` calls at once and refuses the rest immediately with a
 * {@link ConcurrencyLimitError} (kind `overloaded`, code `ERR_CONCURRENCY_LIMIT`): no queue, no
 * waiting, no timer. A refused operation never runs, so when the limit sits outermost in a
 * `pipeline` a refusal costs nothing downstream (no retry, no breaker count).
 *
 * Each admitted call holds its slot until its operation settles, and releases it exactly once
 * whether it resolves, rejects, throws synchronously or gives up on an abort. A caller abort does
 * not free the slot early: the slot stands for work actually running, so an operation that
 * ignores its signal keeps it until it ends. `inFlight` reads the current count.
 *
 * Events (docs/events.md): `onSuccess`, `onFailure` (never `handled`: the limit does not act on
 * failures) and `onRejected` with `reason: 'limit-reached'`, on the policy or as options.
 *
 * Throws a `TypeError` when `max` is not a positive integer or an option is invalid. Use
 * {@link bulkhead} instead when callers should wait for a slot.
 *
 * @example
 * const limit = concurrencyLimit(64);
 * app.post('/render', async (req, res) => {
 *   try {
 *     res.send(await limit.execute(({ signal }) => render(req.body, { signal })));
 *   } catch (error) {
 *     problemResponse(res, error); // ConcurrencyLimitError → 503
 *   }
 * });
 */
export function concurrencyLimit(max: number, options?: ConcurrencyLimitOptions): ConcurrencyLimitPolicy {
  return new ConcurrencyLimitPolicy(max, options);
}
