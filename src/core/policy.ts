/**
 * The `Policy` contract and the machinery every built-in policy shares. Internally a policy
 * passes outcomes (data) to the policy around it; only `execute`, the outer edge, throws.
 */
import { isAbortSignal, neverAborted, signalTypeError } from './abort.js';
import { type Context, type Operation, rootContext } from './context.js';
import { failure, type Outcome, success } from './outcome.js';
import { show } from './validate.js';

/** Options for one {@link Policy.execute} call. */
export interface ExecuteOptions {
  /** Cancels the call: the operation's signal aborts and the call rejects with `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
  /** Absolute time (on the policies' clock, epoch ms for `systemClock`) by which the call must end. */
  readonly deadline?: number | undefined;
}

// Type-level only: no value of this name exists at runtime, no policy has the property.
declare const extraType: unique symbol;

/**
 * A resilience policy: it runs an operation and decides what to do when it fails or takes too long.
 * Compose policies with `pipeline(...)`.
 *
 * `Extra` is what the policy may resolve with instead of the operation's value: `never` for most
 * policies, the handler's value for a `fallback` (`fallback(() => null)` is a `Policy<null>`), and
 * for a `pipeline` the union of its policies' extras, so the caller sees `T | null`.
 *
 * @example
 * const guarded: Policy<null> = pipeline(fallback(() => null), retry());
 * const quote = await guarded.execute(async () => ({ price: 1 })); // { price: number } | null
 */
export interface Policy<Extra = never> {
  /**
   * Runs `operation` under this policy. Resolves with the operation's value (or the policy's
   * `Extra` substitute); rejects with the operation's error or with the policy's refusal (a
   * `RejectedError`). An already-aborted `signal` rejects at once with its reason, without
   * calling the operation. Bad arguments (an operation that is not a function, a `signal` that is
   * not an `AbortSignal`, a `deadline` that is not a number) reject with a `TypeError` before
   * anything runs or is queued: `execute` never throws synchronously.
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T | Extra>;
  /**
   * Type-level only, never present at runtime: carries `Extra` so {@link PolicyExtra} (and
   * `pipeline`) can read it back, which TypeScript cannot do from the generic `execute`.
   */
  readonly [extraType]?: (() => Extra) | undefined;
}

/**
 * The `Extra` of a policy type: what it may resolve with besides the operation's value. A type
 * declared as `Policy<X>` gives `X`; an object that only has an `execute` resolving with the
 * operation's value (a built-in policy class, another library's policy) gives `never`; any other
 * `execute` gives `unknown`, since its substitute cannot be read from the type.
 */
export type PolicyExtra<P> = P extends unknown
  ? typeof extraType extends keyof P
    ? NonNullable<P[typeof extraType]> extends () => infer Extra
      ? Extra
      : never
    : P extends Policy
      ? never
      : unknown
  : never;

/** One step of a composed call: runs what is inside and reports an outcome; never rejects. */
export type Step<T> = (context: Context) => Promise<Outcome<T>>;

/** The internal composition hook of built-in policies. */
export const runStep: unique symbol = Symbol.for('bulwark.policy.run') as never;

/** A policy that can run inside a pipeline without throwing between layers. */
export interface ComposablePolicy<Extra = never> extends Policy<Extra> {
  [runStep]<T>(next: Step<T>, context: Context): Promise<Outcome<T>>;
}

/** True for promises and other thenables. */
export function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return value !== null && typeof value === 'object' && typeof (value as PromiseLike<T>).then === 'function';
}

/** Calls the user's operation and turns its result, rejection or synchronous throw into an outcome. */
export function invoke<T>(operation: Operation<T>, context: Context): Promise<Outcome<T>> {
  try {
    const result = operation(context);
    // Stryker disable next-line ConditionalExpression: (true) Promise.resolve of a plain value, then success, is the same outcome a tick later
    if (isThenable<T>(result)) return Promise.resolve(result).then(success, failure);
    return Promise.resolve(success(result as T));
  } catch (error) {
    return Promise.resolve(failure(error));
  }
}

// Calls made without options all share this one frozen root context: no allocation per call.
const bareContext: Context = Object.freeze({ signal: neverAborted, attempt: 1 });

/**
 * Checks the arguments of `execute` and builds the root context. Throws a `TypeError` for an
 * operation that is not a function, options that are not an object, a `signal` that is not an
 * `AbortSignal` (a look-alike object, `null`, an `AbortController`) or a `deadline` that is not a
 * number.
 */
export function startContext<T>(operation: Operation<T>, options: ExecuteOptions | undefined): Context {
  if (typeof operation !== 'function') {
    throw new TypeError(`expected "operation" to be a function, got ${show(operation)}`);
  }
  if (options === undefined) return bareContext;
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`expected "options" to be an options object, got ${show(options)}`);
  }
  const { signal = neverAborted, deadline } = options;
  // Checked before anything is queued or subscribed: a look-alike would fail later, half-applied.
  if (!isAbortSignal(signal)) throw signalTypeError(signal);
  if (deadline !== undefined && (typeof deadline !== 'number' || Number.isNaN(deadline))) {
    throw new TypeError(`expected "deadline" to be a number, got ${show(deadline)}`);
  }
  return rootContext(signal, deadline);
}

/**
 * The checks every `execute` makes before running anything (every built-in policy's `execute`
 * starts here). Bad arguments (a `TypeError`, see {@link startContext}) and an already-aborted
 * signal (its reason) come back as a rejected promise for `execute` to return as is, never a
 * synchronous throw; otherwise the root context.
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
  // Stryker disable next-line OptionalChaining: only composable() calls it, with a pipeline argument already checked to have an execute method (never null)
  return typeof (value as ComposablePolicy | null)?.[runStep] === 'function';
}

/**
 * Adapts any object with an `execute` method (a policy from another library or your own) so it
 * can sit in a pipeline: it sees a throwing operation, as its own contract expects.
 */
export function composable<Extra>(policy: Policy<Extra>): ComposablePolicy<Extra> {
  if (isComposable(policy)) return policy;
  // Inside, a substitute value travels as the operation's T; the pipeline's type says T | Extra.
  return new ForeignPolicy(policy as Policy);
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
        .then(success, failure);
    } catch (error) {
      outcome = Promise.resolve(failure(error));
    }
    return outcome;
  }
}
