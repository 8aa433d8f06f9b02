/**
 * The context every operation receives, and the internal context implementations policies
 * hand to the policies inside them.
 */

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
}
