/**
 * An abort signal that costs nothing until someone reads it: the `AbortController` is created on
 * the first read of {@link LazySignal.signal} (already aborted, with the stored reason, if
 * {@link LazySignal.abort} came first). For the signals handed to user code that most callers
 * never look at: a controller costs microseconds, an abort with a listener more.
 */
export class LazySignal {
  /** True once {@link abort} was called. */
  aborted = false;
  /** What {@link abort} was called with (`undefined` before). */
  reason: unknown = undefined;
  private controller: AbortController | undefined = undefined;

  /** The signal (created on first read). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Aborts the signal with `reason`, once: later calls are ignored. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}
