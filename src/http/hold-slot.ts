/**
 * Holding one HTTP request in a policy (normally a bulkhead): admission, the slot's lifetime and a
 * client that leaves while queued. Shared by the bulkhead middleware and the route wrappers.
 */
import type { ServerResponse } from 'node:http';
import { isThenable, type Policy } from '../core/policy.js';

/** Whether `value` can hold a request: anything with `execute` (a `bulkhead()`, any `Policy`). */
export function isPolicy(value: unknown): value is Policy {
  return typeof value === 'object' && value !== null && typeof (value as Policy).execute === 'function';
}

/** What one adapter does with a request held in a policy. */
export interface Held {
  /**
   * Runs the request once admitted. The slot is held until the returned promise settles; it must
   * not reject (the adapter reports its own errors).
   */
  run(): Promise<void>;
  /** Answers the policy's refusal (bulkhead full, queue timeout). */
  refuse(error: unknown): void;
  /** The client left before the request ran: there is nobody to answer. */
  gone(): void;
}

const noop = (): void => {};

/** Resolves once `response` has closed: finished, or the client went away. */
export function untilClosed(response: ServerResponse): Promise<void> {
  if (response.closed) return Promise.resolve();
  return new Promise((resolve) => response.once('close', () => resolve()));
}

/** Where the outcome of a held request's work goes. */
export interface WorkOutcome {
  /** The work's value (a route handler's return value, or what its promise resolved to). */
  value(value: unknown): void;
  /** The work's synchronous throw or rejection. */
  error(error: unknown): void;
}

/**
 * Runs `work` (a route handler, or the continuation to the handlers) for an admitted request and
 * resolves when its slot may be freed: once the response has closed and, if `work` returned a
 * promise, that promise has settled. Its value or error goes to `outcome`; the returned promise
 * does not reject (unless `outcome` throws), as {@link Held.run} requires.
 */
export function heldFor(response: ServerResponse, work: () => unknown, outcome: WorkOutcome): Promise<void> {
  const closed = untilClosed(response);
  let result: unknown;
  try {
    result = work();
  } catch (error) {
    outcome.error(error);
    return closed;
  }
  // Stryker disable next-line ConditionalExpression,BlockStatement: (false, {}) a plain value then takes the promise path below: the same value reported a microtask later, the same slot lifetime
  if (!isThenable(result)) {
    outcome.value(result);
    return closed;
  }
  const settled = Promise.resolve(result).then(
    (value) => outcome.value(value),
    (error: unknown) => outcome.error(error),
  );
  return Promise.all([settled, closed]).then(noop);
}

/**
 * Runs `held` inside `policy`. A client that goes away while queued aborts its wait: it leaves the
 * queue without taking a slot, and `run` is never called (not even by a policy that ignores the
 * abort). A refusal before `run` started goes to `held.refuse`; if that throws, the response is
 * destroyed rather than left hanging.
 */
export function holdSlot(policy: Policy, response: ServerResponse, held: Held): void {
  const controller = new AbortController();
  let started = false;
  const onEarlyClose = (): void => {
    // Stryker disable next-line ConditionalExpression: (true) the listener is removed as the request starts, so it only ever runs before
    if (!started) controller.abort();
  };
  response.once('close', onEarlyClose);
  // A client that left before this adapter ran: the request never runs nor takes a slot.
  if (response.closed) controller.abort();
  const operation = (): Promise<void> => {
    started = true;
    response.off('close', onEarlyClose);
    if (controller.signal.aborted) {
      held.gone();
      return Promise.resolve();
    }
    return held.run();
  };
  let result: Promise<void>;
  try {
    result = policy.execute(operation, { signal: controller.signal });
  } catch (error) {
    result = Promise.reject(error);
  }
  result.then(noop, (error: unknown) => {
    if (started) return; // the request ran: its adapter owns the response
    response.off('close', onEarlyClose);
    if (controller.signal.aborted) {
      held.gone();
      return;
    }
    try {
      held.refuse(error);
    } catch {
      response.destroy(); // could not answer: at least do not leave the client hanging
    }
  });
}
