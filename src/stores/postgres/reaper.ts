/**
 * A periodic clean-up on the store's clock: started on first use, its timer never keeps the process
 * alive, runs never overlap, a failed run is ignored (the next one tries again), and `stop()` ends it.
 * Each run deletes in bounded batches ({@link reapInBatches}), so no statement holds many row locks
 * and no call runs unbounded.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Database } from './database.js';

/** How often each store's reaper runs, in milliseconds. */
export const REAP_INTERVAL_MS = 60_000;
/** Most rows one reaper statement deletes. */
const REAP_BATCH = 1_000;
/** Most reaper statements one `reap()` runs (so one call stays bounded). */
const REAP_MAX_BATCHES = 100;

/**
 * Runs `statement` (a `reapStatement` from sql.ts: $1 the batch size, one row `n`) until a batch
 * deletes fewer than {@link REAP_BATCH} rows, at most 100 times; resolves with how many rows it
 * deleted, rejects as `db.query` does.
 */
export async function reapInBatches(db: Database, statement: string): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < REAP_MAX_BATCHES; batch++) {
    const rows = await db.query<{ n: number }>(statement, [REAP_BATCH]);
    const n = rows[0]?.n ?? 0;
    total += n;
    if (n < REAP_BATCH) break;
  }
  return total;
}

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
