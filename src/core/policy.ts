/**
 * The `Policy` contract and the machinery every built-in policy shares. Internally a policy
 * passes outcomes (data) to the policy around it; only `execute`, the outer edge, throws.
 */
import { neverAborted } from './abort.js';
import { type Context, type Operation, rootContext } from './context.js';
import { failure, type Outcome } from './outcome.js';
import { show } from './validate.js';

/** Options for one {@link Policy.execute} call. */
export interface ExecuteOptions {
  /** Cancels the call: the operation's signal aborts and the call rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
  /** Absolute time (on the policies' clock, epoch ms for `systemClock`) by which the call must end. */
  readonly deadline?: number;
}

/**
 * A resilience policy: it runs an operation and decides what to do when it fails or takes too long.
 * Compose policies with `pipeline(...)`.
 */
export interface Policy {
  /**
   * Runs `operation` under this policy. Resolves with the operation's value; rejects with the
   * operation's error or with the policy's refusal (a `RejectedError`). An already-aborted
   * `signal` rejects at once with its reason, without calling the operation.
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T>;
}

/** One step of a composed call: runs what is inside and reports an outcome; never rejects. */
export type Step<T> = (context: Context) => Promise<Outcome<T>>;

/** The internal composition hook of built-in policies. */
export const runStep: unique symbol = Symbol.for('bulwark.policy.run') as never;

/** A policy that can run inside a pipeline without throwing between layers. */
export interface ComposablePolicy extends Policy {
  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>>;
}

const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });

/** True for promises and other thenables. */
export function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<T>).then === 'function';
}

/** Calls the user's operation and turns its result, rejection or synchronous throw into an outcome. */
export function invoke<T>(operation: Operation<T>, context: Context): Promise<Outcome<T>> {
  try {
    const result = operation(context);
    if (isThenable<T>(result)) return Promise.resolve(result).then(ok, failure);
    return Promise.resolve(ok(result as T));
  } catch (error) {
    return Promise.resolve(failure(error));
  }
}

// Calls made without options all share this one frozen root context: no allocation per call.
const bareContext: Context = Object.freeze({ signal: neverAborted, attempt: 1 });

/** Checks the arguments of `execute` and builds the root context; throws a TypeError on bad input. */
export function startContext<T>(operation: Operation<T>, options: ExecuteOptions | undefined): Context {
  if (typeof operation !== 'function') {
    throw new TypeError(`expected "operation" to be a function, got ${show(operation)}`);
  }
  if (options === undefined) return bareContext;
  const { signal = neverAborted, deadline } = options;
  if (deadline !== undefined && (typeof deadline !== 'number' || Number.isNaN(deadline))) {
    throw new TypeError(`expected "deadline" to be a number, got ${show(deadline)}`);
  }
  return rootContext(signal, deadline);
}

/**
 * The checks every `execute` makes before running anything. Bad arguments (a `TypeError`) and an
 * already-aborted signal (its reason) come back as a rejected promise for `execute` to return as
 * is; otherwise the root context.
 */
export function openEdge<T>(
  operation: Operation<T>,
  options: ExecuteOptions | undefined,
): Context | Promise<never> {
  let context: Context;
  try {
    context = startContext(operation, options);
  } catch (error) {
    return Promise.reject(error);
  }
  return context.signal.aborted ? Promise.reject(context.signal.reason) : context;
}

/** Turns an outcome back into a value or a throw (the outer edge). */
export function settle<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
}

/** The base of every built-in policy: `execute` is the outer edge around {@link runStep}. */
export abstract class BasePolicy implements ComposablePolicy {
  abstract [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>>;

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const context = openEdge(operation, options);
    if (context instanceof Promise) return context;
    return this[runStep]((ctx: Context) => invoke(operation, ctx), context).then(settle);
  }
}

/** True when `value` is a built-in (composable) policy. */
export function isComposable(value: unknown): value is ComposablePolicy {
  return typeof (value as ComposablePolicy | null)?.[runStep] === 'function';
}

/**
 * Adapts any object with an `execute` method (a policy from another library or your own) so it
 * can sit in a pipeline: it sees a throwing operation, as its own contract expects.
 */
export function composable(policy: Policy): ComposablePolicy {
  if (isComposable(policy)) return policy;
  return new ForeignPolicy(policy);
}

class ForeignPolicy extends BasePolicy {
  constructor(private readonly inner: Policy) {
    super();
  }
  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>> {
    let outcome: Promise<Outcome<T>>;
    try {
      outcome = this.inner
        .execute((ctx) => next(ctx).then(settle), { signal: context.signal, deadline: context.deadline })
        .then(ok, failure);
    } catch (error) {
      outcome = Promise.resolve(failure(error));
    }
    return outcome;
  }
}
