/**
 * A worker process of `npm start -- --workers N`: one build of the payments API on the run's
 * Redis, PostgreSQL schema and JetStream stream, calling the main process's processor and
 * warehouse. Driven over IPC (lab/hosts/worker-protocol.ts).
 */
import { Redis } from 'ioredis';
import { redisStores } from '../src/stores/redis/index.js';
import type { BuildDeps } from './api/build.js';
import { startApi } from './api/server.js';
import { accountIdsOf } from './bank.js';
import { postgresDatabase } from './database.js';
import { makeBuild } from './hosts/embedded.js';
import type { RunnerMessage, WorkerConfig, WorkerMessage } from './hosts/worker-protocol.js';
import { natsBroker } from './nats-broker.js';
import { remoteProcessor, remoteWarehouse } from './remote/clients.js';
import { SeriesRecorder } from './series.js';
import { createTimeline } from './timeline.js';

const send = (message: WorkerMessage) => process.send?.(message);

async function serve(config: WorkerConfig): Promise<void> {
  const timeline = createTimeline(config.durationMs);
  const series = new SeriesRecorder(timeline);
  const db = postgresDatabase(config.services.postgres, config.schema, 8);
  const redis = new Redis(config.services.redis, { maxRetriesPerRequest: 1 });
  const stores = redisStores(redis, { prefix: config.redisPrefix, timeoutMs: 1_000 });
  const broker = await natsBroker({ url: config.services.nats, stream: config.stream, seed: config.seed });
  const accountIds = accountIdsOf(config.accounts);
  const deps: BuildDeps = {
    seed: config.seed,
    timeline,
    bank: { db, accountIds },
    broker,
    processor: remoteProcessor(config.groundTruthUrl),
    warehouse: remoteWarehouse(config.groundTruthUrl),
    series,
    source: config.source,
    tenantRatePerSecond: config.tenantRatePerSecond,
    resetTimeoutMs: config.resetTimeoutMs,
    shared: config.build === 'bulwark' ? { redis: stores, schema: config.schema } : undefined,
  };
  const build = await makeBuild(config.build, deps);
  const api = await startApi(build, accountIds, series);

  process.on('message', (message: RunnerMessage) => {
    if (message.type === 'start') timeline.start(message.atMs);
    else if (message.type === 'drain')
      void build
        .drain(message.timeoutMs)
        .then(() => send({ type: 'drained', stats: build.stats(), series: series.series() }));
    else if (message.type === 'close')
      void (async () => {
        await api.close();
        await build.close();
        await broker.close();
        await stores.close();
        redis.disconnect();
        await db.close();
        send({ type: 'closed' });
        process.disconnect();
      })();
  });
  send({ type: 'ready', url: api.url });
}

process.once('message', (config: WorkerConfig) => {
  serve(config).catch((error: unknown) => {
    send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exitCode = 1;
    process.disconnect();
  });
});
