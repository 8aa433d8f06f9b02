import type { Context } from '../core/context.js';

/**
 * The context of one hedged try: its own attempt number and its own signal, a child of the call's.
 * The signal is created only if the try reads it, so a try that never looks at its signal costs
 * no AbortController, and aborting it (when it loses) costs no `abort()` call.
 *
 * The call, not the try, listens to the parent signal and fans a caller abort out to every
 * in-flight try: one listener per call instead of one per try.
 */
export class TryContext implements Context {
  private controller: AbortController | undefined = undefined;
  private aborted = false;
  private reason: unknown = undefined;

  constructor(
    private readonly parent: Context,
    readonly attempt: number,
  ) {}

  get deadline(): number | undefined {
    return this.parent.deadline;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      if (this.aborted) controller.abort(this.reason);
      else {
        const parent = this.parent.signal;
        if (parent.aborted) controller.abort(parent.reason);
      }
    }
    return this.controller.signal;
  }

  /** Aborts this try's signal with `reason` (now, or when it is first read). Idempotent. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** True once {@link abort} was called. */
  get wasAborted(): boolean {
    return this.aborted;
  }
}
