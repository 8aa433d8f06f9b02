/**
 * One lab run: the same seeded load against the protected build, then against the naive one, each
 * on its own embedded database, processor, warehouse and broker; then the ground truth of each.
 */
import type { Build, BuildDeps } from './api/build.js';
import { naiveBuild } from './api/naive.js';
import { protectedBuild } from './api/protected.js';
import { startApi } from './api/server.js';
import { createBank, snapshotBank } from './bank.js';
import { createBroker } from './broker.js';
import type { BuildRun } from './checks.js';
import { pgliteDatabase } from './database.js';
import { runLoad } from './load/generator.js';
import type { LoadRecorder } from './load/stats.js';
import { cardProcessor } from './processor.js';
import { SeriesRecorder } from './series.js';
import { createTimeline, type Timeline } from './timeline.js';
import { waitFor } from './wait.js';
import { createWarehouse } from './warehouse.js';

/** Options of {@link runLab}. */
export interface LabOptions {
  /** Load per build, in ms. */
  readonly durationMs: number;
  /** Seeds the processor's chaos, the broker and every client. @default 1 */
  readonly seed?: number;
  /** Well-behaved clients. @default 16 */
  readonly clients?: number;
  /** Clients of the noisy tenant. @default 12 */
  readonly noisyClients?: number;
  /** Called when a build's load starts, with what to watch. */
  readonly onLoad?: (build: string, recorder: LoadRecorder, timeline: Timeline) => void;
  /** Called when a build's load is over and its events are being drained. */
  readonly onSettle?: (build: string) => void;
}

/** Which builds a run compares, in the order they run. */
const builds: ReadonlyArray<{ name: string; make: (deps: BuildDeps) => Build | Promise<Build> }> = [
  { name: 'bulwark', make: protectedBuild },
  { name: 'naive', make: naiveBuild },
];

async function runBuild(
  entry: (typeof builds)[number],
  options: LabOptions & { seed: number },
): Promise<BuildRun> {
  const { seed, durationMs } = options;
  const timeline = createTimeline(durationMs);
  const bank = await createBank(await pgliteDatabase(), 12);
  const series = new SeriesRecorder(timeline);
  const deps: BuildDeps = {
    seed,
    timeline,
    bank,
    broker: createBroker({ seed }),
    processor: cardProcessor({ seed, timeline, series }),
    warehouse: createWarehouse(),
    series,
    source: 'breaker',
    tenantRatePerSecond: 50,
    resetTimeoutMs: Math.min(2_000, Math.max(500, durationMs * 0.08)),
  };
  const build = await entry.make(deps);
  const api = await startApi(build, bank.accountIds, series);
  try {
    const load = await runLoad({
      baseUrl: api.url,
      seed,
      timeline,
      accountIds: bank.accountIds,
      clients: options.clients ?? 16,
      noisyClients: options.noisyClients ?? 12,
      series,
      onStart: (recorder) => options.onLoad?.(entry.name, recorder, timeline),
    });
    options.onSettle?.(entry.name);
    // Calls a client stopped waiting for may still charge: let them land before counting.
    await waitFor(() => deps.processor.ledger().inFlight === 0, 10_000);
    await build.drain(10_000);
    return {
      name: entry.name,
      load,
      processor: deps.processor.ledger(),
      warehouse: deps.warehouse.ledger(),
      bank: await snapshotBank(bank.db),
      stats: build.stats(),
      series: series.series(),
    };
  } finally {
    await api.close();
    await build.close();
    await bank.db.close();
  }
}

/**
 * Runs the lab: each build in turn under the same seeded load; resolves with both runs, the
 * protected build first.
 *
 * @example
 * const [bulwark, naive] = await runLab({ durationMs: 4_000 });
 */
export async function runLab(options: LabOptions): Promise<BuildRun[]> {
  const runs: BuildRun[] = [];
  for (const entry of builds) runs.push(await runBuild(entry, { ...options, seed: options.seed ?? 1 }));
  return runs;
}
