/**
 * The context every operation receives, and the internal context implementations policies
 * hand to the policies inside them.
 */
import { type AbortListener, offAbort, onAbort } from './abort.js';

/** What an operation is told about the call it serves. */
export interface Context {
  /** Aborts when the caller aborts or an enclosing policy (a timeout) gives up on this attempt. */
  readonly signal: AbortSignal;
  /** 1 for the first try; retry and hedge count up from there. */
  readonly attempt: number;
  /** Absolute time (on the policies' clock) by which the call must finish, when one is known. */
  readonly deadline?: number | undefined;
}

/** The work a policy runs. It receives a {@link Context} and should honour its `signal`. */
export type Operation<T> = (context: Context) => Promise<T> | T;

/** The context of the outermost call. */
export function rootContext(signal: AbortSignal, deadline: number | undefined): Context {
  return deadline === undefined ? { signal, attempt: 1 } : { signal, attempt: 1, deadline };
}

/** The internal hook by which a context with a lazily created signal offers an {@link AbortWatch}. */
export const abortWatch: unique symbol = Symbol('bulwark.context.abortWatch') as never;

/**
 * What a context whose signal is created only when read (a timeout scope, a hedged try) offers
 * the policies inside it instead: its abort state and a subscription, so an inner policy that only
 * needs to know about an abort never forces an `AbortController` into existence (in Node 20 one
 * costs ~3 µs, more than a whole timed call).
 */
export interface AbortWatch {
  /** True once the context has aborted. */
  readonly isAborted: boolean;
  /** The reason it aborted with (`undefined` while it has not). */
  readonly abortReason: unknown;
  /** Calls `listener` once when the context aborts; does nothing if it already has. */
  watchAbort(listener: AbortListener): void;
  /** Removes a subscription made with {@link AbortWatch.watchAbort}; unknown ones are ignored. */
  unwatchAbort(listener: AbortListener): void;
}

function watchOf(context: Context): AbortWatch | undefined {
  return (context as { readonly [abortWatch]?: AbortWatch | undefined })[abortWatch];
}

/** True when the context has aborted, without creating a lazily created signal. */
export function contextAborted(context: Context): boolean {
  const watch = watchOf(context);
  return watch === undefined ? context.signal.aborted : watch.isAborted;
}

/** The reason the context aborted with, without creating a lazily created signal. */
export function contextAbortReason(context: Context): unknown {
  const watch = watchOf(context);
  return watch === undefined ? context.signal.reason : watch.abortReason;
}

/**
 * Calls `listener` once when the context aborts (check {@link contextAborted} first: nothing is
 * called for an abort that already happened). Calls sharing one caller signal share its one real
 * listener ({@link onAbort}); a lazily signalled context is watched without creating its signal.
 */
export function watchContext(context: Context, listener: AbortListener): void {
  const watch = watchOf(context);
  if (watch === undefined) onAbort(context.signal, listener);
  else watch.watchAbort(listener);
}

/** Removes a subscription made with {@link watchContext} on the same context. */
export function unwatchContext(context: Context, listener: AbortListener): void {
  const watch = watchOf(context);
  if (watch === undefined) offAbort(context.signal, listener);
  else watch.unwatchAbort(listener);
}

/**
 * A child context that renumbers the attempt and otherwise reads through to its parent, so a
 * parent whose signal is created lazily (a timeout scope) is not forced to create it.
 */
export class AttemptContext implements Context {
  constructor(
    private readonly parent: Context,
    readonly attempt: number,
  ) {}
  get signal(): AbortSignal {
    return this.parent.signal;
  }
  get deadline(): number | undefined {
    return this.parent.deadline;
  }
  get [abortWatch](): AbortWatch | undefined {
    return watchOf(this.parent);
  }
}
