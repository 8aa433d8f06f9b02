import { type AbortListener, callListener } from '../core/abort.js';
import {
  type AbortWatch,
  abortWatch,
  type Context,
  contextAborted,
  contextAbortReason,
} from '../core/context.js';

/**
 * The context of one hedged try: its own attempt number and its own signal, a child of the call's.
 * The signal is created only if the try reads it, so a try that never looks at its signal costs
 * no AbortController, and aborting it (when it loses) costs no `abort()` call.
 *
 * The call, not the try, listens to the parent signal and fans a caller abort out to every
 * in-flight try: one listener per call instead of one per try.
 */
export class TryContext implements Context, AbortWatch {
  private controller: AbortController | undefined = undefined;
  private aborted = false;
  private reason: unknown = undefined;
  private watchers: Set<AbortListener> | undefined = undefined;

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
      if (this.isAborted) controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get [abortWatch](): AbortWatch {
    return this;
  }

  // The call aborts every try when its parent aborts, so the parent's state is this try's too.
  get isAborted(): boolean {
    return this.aborted || contextAborted(this.parent);
  }

  get abortReason(): unknown {
    return this.aborted ? this.reason : contextAbortReason(this.parent);
  }

  watchAbort(listener: AbortListener): void {
    if (this.aborted) return;
    if (this.watchers === undefined) this.watchers = new Set();
    this.watchers.add(listener);
  }

  unwatchAbort(listener: AbortListener): void {
    this.watchers?.delete(listener);
  }

  /** Aborts this try's signal with `reason` (now, or when it is first read). Idempotent. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    const watchers = this.watchers;
    if (watchers !== undefined) {
      this.watchers = undefined;
      for (const watcher of watchers) callListener(watcher);
    }
  }

  /** True once {@link abort} was called. */
  get wasAborted(): boolean {
    return this.aborted;
  }
}
