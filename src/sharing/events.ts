/** The events of a `Coalescer` or a `dedup`, and the hooks that emit them. */
import { type Listener, Listeners } from '../core/events.js';
import type { CancelledEvent, SharedEvent } from './options.js';
import type { SharedCallHooks } from './shared-calls.js';

/** The events of a `Coalescer` or `dedup`, and the hooks that emit them. */
export class SharingEvents implements SharedCallHooks {
  readonly sharedCalls = new Listeners<SharedEvent>();
  readonly cancelledCalls = new Listeners<CancelledEvent>();

  constructor(
    private readonly policy: string,
    options: {
      readonly onShared: Listener<SharedEvent> | undefined;
      readonly onCancelled: Listener<CancelledEvent> | undefined;
    },
  ) {
    if (options.onShared) this.sharedCalls.add(options.onShared);
    if (options.onCancelled) this.cancelledCalls.add(options.onCancelled);
  }

  shared(key: string, waiters: number): void {
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (this.sharedCalls.active) this.sharedCalls.emit({ policy: this.policy, key, waiters });
  }

  cancelled(key: string, reason: unknown): void {
    // Stryker disable next-line ConditionalExpression: (true) as above
    if (this.cancelledCalls.active) this.cancelledCalls.emit({ policy: this.policy, key, reason });
  }
}
