/**
 * Property tests of `Coalescer` and `dedup` over any interleaving of callers joining (with or
 * without a signal), callers aborting, and the call settling (resolving or failing):
 *
 * - the function runs once per call: a new call starts only after the previous one settled or was
 *   cancelled (or with `forget`, not used here);
 * - a caller that aborted before the call settled rejects with its own reason (`Coalescer`), or
 *   with the first reason (`dedup`: every caller of that call);
 * - every other caller gets the call's own outcome;
 * - the call's signal aborts exactly when every caller left before it settled (`Coalescer`), or
 *   when any caller aborted before it settled (`dedup`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import { Coalescer } from './coalescer.js';
import { dedup } from './dedup.js';
import type { SharedCallContext } from './shared-calls.js';

type Step =
  | { readonly kind: 'join'; readonly withSignal: boolean }
  | { readonly kind: 'abort'; readonly caller: number }
  | { readonly kind: 'settle'; readonly ok: boolean };

const steps = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('join' as const), withSignal: fc.boolean() }),
    fc.record({ kind: fc.constant('abort' as const), caller: fc.nat({ max: 7 }) }),
    fc.record({ kind: fc.constant('settle' as const), ok: fc.boolean() }),
  ),
  { maxLength: 24 },
);

interface Call {
  readonly context: SharedCallContext;
  readonly gate: ReturnType<typeof deferred<string>>;
  readonly callers: number[];
  settled: boolean;
  /** How it settled (it resolves 'value' if the script never settles it). */
  ok: boolean;
  /** The first abort while it ran (dedup), or whether every caller had left (Coalescer). */
  cancelledWith: unknown;
  cancelled: boolean;
}

interface Caller {
  readonly call: Call;
  readonly controller: AbortController | undefined;
  outcome: { value?: unknown; error?: unknown } | undefined;
  left: boolean;
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

async function check(mode: 'coalescer' | 'dedup', script: readonly Step[]): Promise<void> {
  const calls: Call[] = [];
  const start = (context: SharedCallContext) => {
    const gate = deferred<string>();
    calls.push({
      context,
      gate,
      callers: [],
      settled: false,
      ok: true,
      cancelledWith: undefined,
      cancelled: false,
    });
    return gate.promise;
  };
  const coalescer = new Coalescer();
  const deduped = dedup((_: string, context: SharedCallContext) => start(context), { key: () => 'k' });
  const callers: Caller[] = [];
  /** The call a new caller joins: the last one, while it neither settled nor was cancelled. */
  const open = () => {
    const last = calls.at(-1);
    return last !== undefined && !last.settled && !last.cancelled ? last : undefined;
  };
  for (const step of script) {
    if (step.kind === 'join') {
      const controller = step.withSignal ? new AbortController() : undefined;
      const options = controller === undefined ? undefined : { signal: controller.signal };
      const before = calls.length;
      const wasOpen = open();
      const promise = mode === 'coalescer' ? coalescer.do('k', start, options) : deduped('x', options);
      expect(calls.length, 'a call starts only when none is open').toBe(
        wasOpen === undefined ? before + 1 : before,
      );
      const joined = wasOpen ?? calls.at(-1)!;
      const caller: Caller = { call: joined, controller, outcome: undefined, left: false };
      joined.callers.push(callers.length);
      callers.push(caller);
      promise.then(
        (value) => (caller.outcome = { value }),
        (error: unknown) => (caller.outcome = { error }),
      );
    } else if (step.kind === 'abort') {
      const caller = callers[step.caller];
      if (caller?.controller === undefined || caller.controller.signal.aborted) continue;
      const { call } = caller;
      const reason = new Error(`caller ${step.caller} left`);
      if (!call.settled && !call.cancelled) {
        caller.left = true;
        if (mode === 'dedup') {
          call.cancelled = true;
          call.cancelledWith = reason;
        } else if (call.callers.every((i) => callers[i]!.left)) {
          call.cancelled = true;
          call.cancelledWith = reason;
        }
      }
      caller.controller.abort(reason);
    } else {
      // Settle the newest call (open, or cancelled and still running).
      const call = calls.at(-1);
      if (call === undefined || call.settled) continue;
      call.settled = true;
      call.ok = step.ok;
      if (step.ok) call.gate.resolve('value');
      else call.gate.reject(new Error('failed'));
    }
    await flush();
  }
  // Settle whatever is still running, then check every caller.
  for (const call of calls) if (!call.settled) call.gate.resolve('value');
  await flush();
  for (const call of calls) {
    expect(call.context.signal.aborted, 'the call was cancelled exactly when the model says').toBe(
      call.cancelled,
    );
    if (call.cancelled) expect(call.context.signal.reason).toBe(call.cancelledWith);
  }
  for (const caller of callers) {
    const { call } = caller;
    expect(caller.outcome, 'every caller settled').toBeDefined();
    if (mode === 'dedup' && call.cancelled) expect(caller.outcome!.error).toBe(call.cancelledWith);
    else if (caller.left) expect(caller.outcome!.error).toBe(caller.controller!.signal.reason);
    else if (call.ok) expect(caller.outcome).toEqual({ value: 'value' });
    else expect((caller.outcome!.error as Error).message).toBe('failed');
  }
}

describe('Coalescer and dedup under any interleaving', () => {
  it('Coalescer: one run per call, each caller its own abort or the call’s outcome', async () => {
    await fc.assert(
      fc.asyncProperty(steps, (script) => check('coalescer', script)),
      { numRuns: 300 },
    );
  });

  it('dedup: one run per call, one abort cancels it for every caller', async () => {
    await fc.assert(
      fc.asyncProperty(steps, (script) => check('dedup', script)),
      { numRuns: 300 },
    );
  });
});
