/**
 * The gate's parked calls (`ParkedCall` + `Resume`), through a minimal queueing policy that parks
 * every call and lets the test decide it: the decision is final and synchronous, a caller that
 * aborted before its turn does not run and its ticket is given back, on `execute` and in a pipeline.
 */
import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../testing/fake-clock.js';
import type { Context } from './context.js';
import { GatedPolicy } from './gate.js';
import { type Admission, type ParkedCall, Refusal, type Resume } from './gate-types.js';
import { pipeline } from './pipeline.js';
import type { FailureEvent, RejectedEvent, SuccessEvent } from './policy-events.js';

class Parked implements ParkedCall {
  parkedWork: unknown = undefined;
  parkedContext: Context | undefined = undefined;
  resolveParked: ((value: unknown) => void) | undefined = undefined;
  rejectParked: ((error: unknown) => void) | undefined = undefined;
  parkedAt = 0;
}

/** Parks every call; the test admits, refuses or fails it. Listens to no signal on purpose. */
class ParkingPolicy extends GatedPolicy<'full'> {
  readonly parked: Parked[] = [];
  readonly decide: Resume<'full'> = this.resume();
  released = 0;

  constructor(clock?: FakeClock) {
    super('parking');
    this.configure({}, clock);
  }

  protected override admit(_context: Context): Admission<'full'> {
    const call = new Parked();
    this.parked.push(call);
    return call;
  }

  protected override release(): void {
    this.released++;
  }
}

const paths = {
  execute: (policy: ParkingPolicy, op: () => unknown, signal?: AbortSignal) =>
    policy.execute(op, signal === undefined ? undefined : { signal }),
  pipeline: (policy: ParkingPolicy, op: () => unknown, signal?: AbortSignal) =>
    pipeline(policy).execute(op, signal === undefined ? undefined : { signal }),
};

describe.each(Object.entries(paths))('gate: parked calls (%s)', (_path, call) => {
  it('an admitted call runs at once, in the same turn, and releases its ticket once', async () => {
    const policy = new ParkingPolicy();
    const op = vi.fn(() => 'ran');
    const result = call(policy, op);
    expect(op).not.toHaveBeenCalled();
    policy.decide.admit(policy.parked[0]!, 0);
    expect(op).toHaveBeenCalledTimes(1);
    await expect(result).resolves.toBe('ran');
    expect(policy.released).toBe(1);
  });

  it('an admitted operation that throws synchronously fails the call and releases once', async () => {
    const policy = new ParkingPolicy();
    const boom = new Error('boom');
    const result = call(policy, () => {
      throw boom;
    });
    policy.decide.admit(policy.parked[0]!, 0);
    await expect(result).rejects.toBe(boom);
    expect(policy.released).toBe(1);
  });

  it('a caller that aborted before its turn does not run; its ticket is given back', async () => {
    const policy = new ParkingPolicy();
    const failures: FailureEvent[] = [];
    policy.onFailure((event) => failures.push(event));
    const controller = new AbortController();
    const op = vi.fn();
    const result = call(policy, op, controller.signal);
    const reason = new Error('gone');
    controller.abort(reason);
    policy.decide.admit(policy.parked[0]!, 0);
    await expect(result).rejects.toBe(reason);
    expect(op).not.toHaveBeenCalled();
    expect(policy.released).toBe(1);
    expect(failures).toMatchObject([{ policy: 'parking', error: reason, handled: false }]);
  });

  it('a refused call fails with the refusal, fires onRejected and never runs', async () => {
    const policy = new ParkingPolicy();
    const rejected: RejectedEvent[] = [];
    const failures: FailureEvent[] = [];
    policy.onRejected((event) => rejected.push(event));
    policy.onFailure((event) => failures.push(event));
    const op = vi.fn();
    const result = call(policy, op);
    const error = new Error('full');
    policy.decide.refuse(policy.parked[0]!, new Refusal('full', error));
    await expect(result).rejects.toBe(error);
    expect(rejected).toEqual([{ policy: 'parking', reason: 'full', error }]);
    expect(failures).toEqual([]);
    expect([op.mock.calls.length, policy.released]).toEqual([0, 0]);
  });

  it('a failed call rejects with the error and never runs', async () => {
    const policy = new ParkingPolicy();
    const op = vi.fn();
    const result = call(policy, op);
    const error = new Error('left');
    policy.decide.fail(policy.parked[0]!, error);
    await expect(result).rejects.toBe(error);
    expect([op.mock.calls.length, policy.released]).toEqual([0, 0]);
  });

  it('a failed call is reported to onFailure once, unhandled', async () => {
    const policy = new ParkingPolicy();
    const failures: FailureEvent[] = [];
    policy.onFailure((event) => failures.push(event));
    const result = call(policy, vi.fn());
    const error = new Error('left');
    policy.decide.fail(policy.parked[0]!, error);
    await expect(result).rejects.toBe(error);
    expect(failures).toMatchObject([{ policy: 'parking', error, handled: false }]);
  });

  it("a call's durationMs counts its wait for a turn", async () => {
    const clock = new FakeClock();
    const policy = new ParkingPolicy(clock);
    const successes: SuccessEvent[] = [];
    policy.onSuccess((event) => successes.push(event));
    const result = call(policy, () => clock.sleep(20).then(() => 'ran'));
    await clock.advance(50);
    policy.decide.admit(policy.parked[0]!, 0);
    await clock.advance(20);
    await expect(result).resolves.toBe('ran');
    expect(successes).toEqual([{ policy: 'parking', durationMs: 70 }]);
    expect(policy.released).toBe(1);
  });
});
