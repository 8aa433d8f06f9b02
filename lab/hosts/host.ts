/**
 * Where a build's API runs during a run: in the lab's own process on embedded stores
 * (lab/hosts/embedded.ts), or in worker processes on Redis, PostgreSQL and NATS
 * (lab/hosts/workers.ts). The runner (lab/scenario.ts) drives both the same way.
 */
import type { BuildStats } from '../api/build.js';
import type { Bank } from '../bank.js';
import type { CardProcessor } from '../processor.js';
import type { RunSeries, SeriesRecorder } from '../series.js';
import type { Timeline } from '../timeline.js';
import type { Warehouse } from '../warehouse.js';

/** What every host is given: the run's ground truth and clock, owned by the runner. */
export interface HostContext {
  readonly build: 'bulwark' | 'naive';
  readonly seed: number;
  readonly timeline: Timeline;
  /** The runner's series (processor calls, latencies); an in-process host records into it too. */
  readonly series: SeriesRecorder;
  readonly processor: CardProcessor;
  readonly warehouse: Warehouse;
  readonly tenantRatePerSecond: number;
  readonly resetTimeoutMs: number;
  /** Accounts in the bank. */
  readonly accounts: number;
}

/** A build's API, running. */
export interface BuildHost {
  /** The API's base URLs, one per process; clients are spread over them. */
  readonly urls: readonly string[];
  /** The bank, as the runner reads it for the checks. */
  readonly bank: Bank;
  /** The load started at `atMs` (epoch ms): processes with a timeline of their own start it. */
  start(atMs: number): void;
  /**
   * Waits until every committed payment's event was handled (or `timeoutMs` passed); resolves with
   * the build's stats (summed over processes) and the series recorded outside the runner's.
   */
  settle(timeoutMs: number): Promise<{ stats: BuildStats; series: RunSeries[] }>;
  /** Stops the API and removes what the run created. */
  close(): Promise<void>;
}

/**
 * Adds up the stats of several processes.
 *
 * @example
 * const total = sumStats(workerStats);
 */
export function sumStats(parts: readonly BuildStats[]): BuildStats {
  const total = { breakerTransitions: 0, breakerRefusals: 0, shed: 0, accountReads: 0 };
  for (const part of parts)
    for (const name of Object.keys(total) as (keyof BuildStats)[]) total[name] += part[name];
  return total;
}
