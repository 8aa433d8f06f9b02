import { AbortScope } from '../core/abort-scope.js';
import { type Context, contextAborted, contextAbortReason } from '../core/context.js';

/**
 * The context of one hedged try: its own attempt number and its own signal, a child of the call's.
 * The signal is created only if the try reads it, so a try that never looks at its signal costs
 * no AbortController, and aborting it (when it loses) costs no `abort()` call.
 *
 * The call, not the try, listens to the parent signal and fans a caller abort out to every
 * in-flight try: one listener per call instead of one per try.
 */
export class TryContext extends AbortScope implements Context {
  constructor(
    private readonly parent: Context,
    readonly attempt: number,
  ) {
    super();
  }

  get deadline(): number | undefined {
    return this.parent.deadline;
  }

  // The call aborts every try when its parent aborts, so the parent's state is this try's too.
  get isAborted(): boolean {
    return this.aborted || contextAborted(this.parent);
  }

  get abortReason(): unknown {
    return this.aborted ? this.reason : contextAbortReason(this.parent);
  }

  /** Aborts this try's signal with `reason` (now, or when it is first read). Idempotent. */
  abort(reason: unknown): void {
    this.abortScope(reason);
  }
}
