/**
 * A rate-limit store standing for a remote one in unit tests (no Redis): the in-memory store behind
 * promises, every call counted, failing every call while `failing` is set. It is not a
 * `MemoryRateLimitStore`, so a limiter treats it as remote (blocked-key memory, `storeFailure`).
 */
import { type MemoryRateLimitStore, memoryRateLimitStore } from '../../../src/rate-limit/memory-store.js';
import type { RateLimitResult, RateLimitRule, RateLimitStore } from '../../../src/rate-limit/store.js';
import type { FakeClock } from '../../../src/testing/fake-clock.js';

export class SwitchableStore implements RateLimitStore {
  readonly inner: MemoryRateLimitStore;
  /** Calls made, by operation. */
  readonly calls: string[] = [];
  /** While set, every call rejects with it. */
  failing: Error | undefined;

  constructor(clock: FakeClock) {
    this.inner = memoryRateLimitStore({ clock });
  }

  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.call('take', () => this.inner.take(key, cost, rule));
  }

  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.call('peek', () => this.inner.peek(key, rule));
  }

  reset(key: string, rule: RateLimitRule): Promise<void> {
    return this.call('reset', () => this.inner.reset(key, rule));
  }

  adjust(key: string, units: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.call('adjust', () => this.inner.adjust(key, units, rule));
  }

  block(key: string, ms: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.call('block', () => this.inner.block(key, ms, rule));
  }

  takeAll(key: string, cost: number, rules: readonly RateLimitRule[]): Promise<RateLimitResult[]> {
    return this.call('takeAll', () => this.inner.takeAll(key, cost, rules));
  }

  private call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.calls.push(operation);
    return this.failing === undefined ? run() : Promise.reject(this.failing);
  }
}
