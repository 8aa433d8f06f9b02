/**
 * A periodic clean-up on the store's clock: started on first use, its timer never keeps the process
 * alive, runs never overlap, a failed run is ignored (the next one tries again), and `stop()` ends it.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';

/** Runs `run` every `intervalMs` once started (see the module doc). */
export class Reaper {
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown>,
  ) {}

  /** Starts the timer, unless running or stopped. */
  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.arm();
  }

  /** Stops for good. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    this.timer = this.clock.setTimer(() => {
      this.run()
        .catch(() => {})
        .finally(() => {
          this.timer = undefined;
          if (!this.stopped) this.arm();
        });
    }, this.intervalMs);
    this.clock.keepAlive?.(this.timer, false);
  }
}
