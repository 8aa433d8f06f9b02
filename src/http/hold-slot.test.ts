/**
 * Holding one request in a policy, against a stand-in response (an EventEmitter with `closed` and
 * `destroy`) and stand-in policies, so each way a held request can end is driven exactly.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../../test/support/deferred.js';
import type { Operation } from '../core/context.js';
import type { Policy } from '../core/policy.js';
import { type Held, heldFor, holdSlot, isPolicy, untilClosed } from './hold-slot.js';

class FakeResponse extends EventEmitter {
  closed = false;
  readonly destroy = vi.fn();
  close(): void {
    this.closed = true;
    this.emit('close');
  }
}

const fakeResponse = () => new FakeResponse();
const asResponse = (r: FakeResponse) => r as unknown as ServerResponse;

/** A policy whose `execute` is `execute`. */
const policyOf = (execute: (operation: Operation<unknown>, options: { signal: AbortSignal }) => unknown) =>
  ({ execute }) as unknown as Policy;

/** A policy that runs the operation at once, like an idle bulkhead. */
const passThrough = policyOf((operation) =>
  Promise.resolve(operation({ signal: new AbortController().signal, attempt: 1 })),
);

function recordingHeld(run: () => Promise<void> = () => Promise.resolve()) {
  const calls: string[] = [];
  const refused: unknown[] = [];
  const held: Held = {
    run: () => {
      calls.push('run');
      return run();
    },
    refuse: (error) => {
      calls.push('refuse');
      refused.push(error);
    },
    gone: () => void calls.push('gone'),
  };
  return { held, calls, refused };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('isPolicy', () => {
  it('is true for anything with an execute function, false for everything else (null included)', () => {
    expect(isPolicy({ execute: () => 1 })).toBe(true);
    expect(isPolicy(null)).toBe(false);
    expect(isPolicy(undefined)).toBe(false);
    expect(isPolicy({ execute: 1 })).toBe(false);
    expect(isPolicy(() => 1)).toBe(false);
  });
});

describe('untilClosed and heldFor', () => {
  it('untilClosed resolves at once for a response already closed, else on its close', async () => {
    const closed = fakeResponse();
    closed.closed = true;
    await expect(untilClosed(asResponse(closed))).resolves.toBeUndefined();
    const open = fakeResponse();
    let done = false;
    void untilClosed(asResponse(open)).then(() => {
      done = true;
    });
    await settle();
    expect(done).toBe(false);
    open.close();
    await settle();
    expect(done).toBe(true);
  });

  it('heldFor on a response already closed frees the slot once the work has settled', async () => {
    const response = fakeResponse();
    response.closed = true;
    const value = vi.fn();
    await heldFor(asResponse(response), () => 'sent', { value, error: vi.fn() });
    expect(value).toHaveBeenCalledWith('sent');
  });

  it('heldFor waits for both the work’s promise and the close, and reports the value', async () => {
    const response = fakeResponse();
    const work = deferred<string>();
    const value = vi.fn();
    let freed = false;
    void heldFor(asResponse(response), () => work.promise, { value, error: vi.fn() }).then(() => {
      freed = true;
    });
    response.close();
    await settle();
    expect(freed).toBe(false);
    work.resolve('report');
    await settle();
    expect(freed).toBe(true);
    expect(value).toHaveBeenCalledWith('report');
  });
});

describe('holdSlot', () => {
  it('runs an admitted request and leaves no close listener of its own once it started', async () => {
    const response = fakeResponse();
    const { held, calls } = recordingHeld();
    holdSlot(passThrough, asResponse(response), held);
    await settle();
    expect(calls).toEqual(['run']);
    expect(response.listenerCount('close')).toBe(0);
  });

  it('a refusal goes to refuse, and leaves no close listener behind', async () => {
    const response = fakeResponse();
    const refusal = new Error('bulkhead full');
    const { held, calls, refused } = recordingHeld();
    holdSlot(
      policyOf(() => Promise.reject(refusal)),
      asResponse(response),
      held,
    );
    await settle();
    expect(calls).toEqual(['refuse']);
    expect(refused).toEqual([refusal]);
    expect(response.listenerCount('close')).toBe(0);
  });

  it('a policy that throws instead of rejecting is a refusal too', async () => {
    const response = fakeResponse();
    const broken = new Error('execute threw');
    const { held, refused } = recordingHeld();
    holdSlot(
      policyOf(() => {
        throw broken;
      }),
      asResponse(response),
      held,
    );
    await settle();
    expect(refused).toEqual([broken]);
  });

  it('a refusal that cannot be answered destroys the response rather than leave the client hanging', async () => {
    const response = fakeResponse();
    holdSlot(
      policyOf(() => Promise.reject(new Error('full'))),
      asResponse(response),
      {
        run: () => Promise.resolve(),
        refuse: () => {
          throw new Error('headers already sent');
        },
        gone: vi.fn(),
      },
    );
    await settle();
    expect(response.destroy).toHaveBeenCalledTimes(1);
  });

  it('a client that leaves while queued aborts the wait: gone, never refused nor run', async () => {
    const response = fakeResponse();
    const { held, calls } = recordingHeld();
    let seen: AbortSignal | undefined;
    holdSlot(
      policyOf(
        (_operation, { signal }) =>
          new Promise((_, reject) => {
            seen = signal;
            signal.addEventListener('abort', () => reject(signal.reason));
          }),
      ),
      asResponse(response),
      held,
    );
    await settle();
    expect(seen?.aborted).toBe(false);
    response.close();
    await settle();
    expect(seen?.aborted).toBe(true);
    expect(calls).toEqual(['gone']);
    expect(response.listenerCount('close')).toBe(0);
  });

  it('a policy that fails the call after the request ran leaves the response to the adapter', async () => {
    const response = fakeResponse();
    const { held, calls } = recordingHeld();
    holdSlot(
      policyOf(async (operation) => {
        await operation({ signal: new AbortController().signal, attempt: 1 });
        throw new Error('timed out after it ran');
      }),
      asResponse(response),
      held,
    );
    await settle();
    expect(calls).toEqual(['run']);
    expect(response.destroy).not.toHaveBeenCalled();
  });
});
