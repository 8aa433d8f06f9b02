/**
 * One lab run: the same seeded load against the protected build, then against the naive one, each
 * on its own database, processor, warehouse and broker; then the ground truth of each. The builds
 * run in this process on embedded stores, or in worker processes on real services
 * (lab/hosts/*).
 */
import { snapshotBank } from './bank.js';
import type { BuildRun } from './checks.js';
import { embeddedHost } from './hosts/embedded.js';
import type { BuildHost, HostContext } from './hosts/host.js';
import type { ServiceUrls } from './hosts/worker-protocol.js';
import { workersHost } from './hosts/workers.js';
import { runLoad } from './load/generator.js';
import type { LoadRecorder } from './load/stats.js';
import { cardProcessor } from './processor.js';
import { mergeSeries, SeriesRecorder } from './series.js';
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
  /**
   * Run each build in this many worker processes on `services` (real Redis, PostgreSQL and NATS)
   * instead of in this process on embedded stores. @default 0 (embedded)
   */
  readonly workers?: number;
  /** Where the services are, with `workers`. */
  readonly services?: ServiceUrls;
  /** Called when a build's load starts, with what to watch. */
  readonly onLoad?: (build: string, recorder: LoadRecorder, timeline: Timeline) => void;
  /** Called when a build's load is over and its events are being drained. */
  readonly onSettle?: (build: string) => void;
}

/** The builds a run compares, in the order they run. */
const builds = ['bulwark', 'naive'] as const;

function startHost(context: HostContext, options: LabOptions): Promise<BuildHost> {
  const { workers = 0, services } = options;
  if (workers === 0) return embeddedHost(context);
  if (services === undefined) throw new TypeError('runLab: "workers" needs "services"');
  return workersHost(context, workers, services);
}

async function runBuild(
  build: HostContext['build'],
  options: LabOptions & { seed: number },
): Promise<BuildRun> {
  const { seed, durationMs } = options;
  const timeline = createTimeline(durationMs);
  const series = new SeriesRecorder(timeline);
  const processor = cardProcessor({ seed, timeline, series });
  const warehouse = createWarehouse();
  const host = await startHost(
    {
      build,
      seed,
      timeline,
      series,
      processor,
      warehouse,
      accounts: 12,
      tenantRatePerSecond: 50,
      resetTimeoutMs: Math.min(2_000, Math.max(500, durationMs * 0.08)),
    },
    options,
  );
  try {
    const load = await runLoad({
      baseUrls: host.urls,
      seed,
      timeline,
      accountIds: host.bank.accountIds,
      clients: options.clients ?? 16,
      noisyClients: options.noisyClients ?? 12,
      series,
      onStart: (recorder) => {
        host.start(Date.now());
        options.onLoad?.(build, recorder, timeline);
      },
    });
    options.onSettle?.(build);
    // Calls a client stopped waiting for may still charge: let them land before counting.
    await waitFor(() => processor.ledger().inFlight === 0, 10_000);
    const settled = await host.settle(15_000);
    return {
      name: build,
      load,
      processor: processor.ledger(),
      warehouse: warehouse.ledger(),
      bank: await snapshotBank(host.bank.db),
      stats: settled.stats,
      series: mergeSeries([series.series(), ...settled.series]),
    };
  } finally {
    await host.close();
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
  for (const build of builds) runs.push(await runBuild(build, { ...options, seed: options.seed ?? 1 }));
  return runs;
}
