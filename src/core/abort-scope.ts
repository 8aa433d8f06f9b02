import { type AbortListener, callListener } from './abort.js';
import { type AbortWatch, abortWatch } from './context.js';

/**
 * A child context's own abort: a signal created only if someone reads it (so a call that never
 * looks at its signal costs no AbortController and no `abort()`), and watchers ({@link AbortWatch})
 * for inner policies that only need to know about the abort. The timeout's scope and the hedge's
 * tries are built on it; a subclass says what else aborts it (its parent) and when to listen.
 */
export abstract class AbortScope implements AbortWatch {
  /** Set once the scope itself aborted: what its signal and watchers got is {@link reason}. */
  protected aborted = false;
  protected reason: unknown = undefined;
  private controller: AbortController | undefined = undefined;
  private watchers: Set<AbortListener> | undefined = undefined;

  abstract get isAborted(): boolean;
  abstract get abortReason(): unknown;

  /** The scope's signal, created on first read (already aborted if the scope is). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = new AbortController();
      this.controller = controller;
      if (this.isAborted) controller.abort(this.abortReason);
      else this.listen();
    }
    return this.controller.signal;
  }

  get [abortWatch](): AbortWatch {
    return this;
  }

  watchAbort(listener: AbortListener): void {
    if (this.aborted) return;
    if (this.watchers === undefined) this.watchers = new Set();
    this.watchers.add(listener);
    this.listen();
  }

  unwatchAbort(listener: AbortListener): void {
    this.watchers?.delete(listener);
  }

  /**
   * Someone now listens to the scope (its signal was read, or a watcher came) and it has not
   * aborted: subscribe to whatever else aborts it. Default: nothing (its owner aborts it).
   */
  protected listen(): void {}

  /** Called as the scope aborts, before its signal and watchers hear of it. Default: nothing. */
  protected beforeAbort(): void {}

  /**
   * Aborts the scope with `reason`: its signal (if created) and every watcher, once. Returns false,
   * doing nothing, when it had already aborted.
   */
  protected abortScope(reason: unknown): boolean {
    if (this.aborted) return false;
    this.aborted = true;
    this.reason = reason;
    this.beforeAbort();
    this.controller?.abort(reason);
    const watchers = this.watchers;
    if (watchers !== undefined) {
      this.watchers = undefined;
      for (const watcher of watchers) callListener(watcher);
    }
    return true;
  }
}
