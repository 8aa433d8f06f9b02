/**
 * Property test of `keyed` over any sequence of gets and of calls starting and ending (a failed
 * call opens its key's circuit, a successful one closes it), on a few keys and a small `maxKeys`:
 *
 * - a held entry (a call in flight, or a circuit not closed) is never evicted: its key keeps the
 *   same policy, and `onRemoved` never reports it as evicted;
 * - `size ≤ maxKeys + (entries held)`;
 * - `onOverflow` fires only when every entry but the new one is held.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import type { Operation } from '../core/context.js';
import type { Policy } from '../core/policy.js';
import { keyed } from './keyed.js';

/**
 * A breaker-like policy: a failed call opens its circuit and a successful one closes it (as a
 * breaker with a threshold of one and no reset timeout would); `calls` counts the calls the script
 * started on it and has not seen end.
 */
interface Fake extends Policy<unknown> {
  state: 'closed' | 'open';
  calls: number;
}

function fake(): Fake {
  const policy: Fake = {
    state: 'closed',
    calls: 0,
    execute: <T>(operation: Operation<T>) =>
      Promise.resolve(operation({ signal: new AbortController().signal, attempt: 1 })).then(
        (value) => {
          policy.state = 'closed';
          return value;
        },
        (error: unknown) => {
          policy.state = 'open';
          throw error;
        },
      ),
  };
  return policy;
}

type Step =
  | { readonly kind: 'get' | 'start'; readonly key: number }
  | { readonly kind: 'end'; readonly call: number; readonly ok: boolean };

const key = fc.nat({ max: 5 });
const steps = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constantFrom('get' as const, 'start' as const), key }),
    fc.record({ kind: fc.constant('end' as const), call: fc.nat(), ok: fc.boolean() }),
  ),
  { maxLength: 60 },
);

const held = (policy: Fake): boolean => policy.calls > 0 || policy.state === 'open';

async function check(maxKeys: number, script: readonly Step[]): Promise<void> {
  const violations: string[] = [];
  const registry = keyed(fake, {
    maxKeys,
    onRemoved: ({ key, instance, reason }) => {
      if (reason === 'evicted' && held(instance)) violations.push(`evicted held ${key}`);
    },
    onOverflow: ({ key, size }) => {
      const others = registry.keys().filter((k) => k !== key);
      const heldOthers = others.filter((k) => held(registry.peek(k)!)).length;
      if (heldOthers !== size - 1) violations.push(`overflow with ${size - 1 - heldOthers} evictable`);
    },
  });
  /** Starts a call on `name` that runs until the script ends it. */
  const start = (name: string) => {
    const gate = deferred<void>();
    const call = registry.execute(name, () => gate.promise).catch(() => {});
    const policy = registry.peek(name)!;
    policy.calls++;
    const end = async (ok: boolean) => {
      policy.calls--; // the registry lets go as the call settles: the script's count first
      if (ok) gate.resolve();
      else gate.reject(new Error('failed'));
      await call;
    };
    return { policy, end };
  };
  const pending: ReturnType<typeof start>[] = [];
  for (const step of script) {
    if (step.kind === 'end')
      await pending.splice(step.call % Math.max(pending.length, 1), 1)[0]?.end(step.ok);
    else if (step.kind === 'get') registry.get(`k${step.key}`);
    else pending.push(start(`k${step.key}`));
    // Every held policy is still its key's policy.
    for (const { policy } of pending) {
      if (!registry.keys().some((k) => registry.peek(k) === policy)) violations.push('a held entry vanished');
    }
    const heldNow = registry.keys().filter((k) => held(registry.peek(k)!)).length;
    if (registry.size > maxKeys + heldNow) violations.push(`size ${registry.size} > ${maxKeys} + ${heldNow}`);
    expect(violations).toEqual([]);
  }
  for (const call of pending.splice(0)) await call.end(true);
}

describe('keyed: invariants over any sequence of uses', () => {
  it('never evicts a held entry, and size ≤ maxKeys + held entries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), steps, (maxKeys, script) => check(maxKeys, script)),
      { numRuns: 300 },
    );
  });
});
