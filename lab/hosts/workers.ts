/**
 * The multi-worker host (`npm start -- --workers N`): the build in N worker processes
 * (lab/worker.ts) behind one load, on real Redis, PostgreSQL and NATS. The run gets its own
 * PostgreSQL schema, Redis key prefix and JetStream stream, all removed at the end; nothing else on
 * the servers is touched. The processor and warehouse stay here, served to the workers over HTTP,
 * so the ground truth is counted in one place.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BuildStats } from '../api/build.js';
import { createBank } from '../bank.js';
import { postgresDatabase } from '../database.js';
import { createNatsStream, natsBacklog } from '../nats-broker.js';
import { serveGroundTruth } from '../remote/server.js';
import type { RunSeries } from '../series.js';
import { waitFor } from '../wait.js';
import { type BuildHost, type HostContext, sumStats } from './host.js';
import type { RunnerMessage, ServiceUrls, WorkerConfig, WorkerMessage } from './worker-protocol.js';

const workerPath = fileURLToPath(new URL('../worker.ts', import.meta.url));

/** One worker process and a way to wait for its next message of a type. */
class Worker {
  readonly #child: ChildProcess;
  #exited = false;

  constructor(readonly name: string) {
    this.#child = fork(workerPath, [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.once('exit', () => {
      this.#exited = true;
    });
  }

  send(message: WorkerConfig | RunnerMessage): void {
    if (!this.#exited) this.#child.send(message);
  }

  /** Resolves with the worker's next `type` message; rejects if it fails or exits first. */
  next<T extends WorkerMessage['type']>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<WorkerMessage, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`${this.name}: no "${type}" within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onMessage = (message: WorkerMessage) => {
        if (message.type === type) done(undefined, message as Extract<WorkerMessage, { type: T }>);
        else if (message.type === 'failed') done(new Error(`${this.name} failed: ${message.error}`));
      };
      const onExit = (code: number | null) =>
        done(new Error(`${this.name} exited (code ${code}) before "${type}"`));
      const done = (error?: Error, message?: Extract<WorkerMessage, { type: T }>) => {
        clearTimeout(timer);
        this.#child.off('message', onMessage).off('exit', onExit);
        if (error === undefined) resolve(message!);
        else reject(error);
      };
      this.#child.on('message', onMessage).once('exit', onExit);
    });
  }

  /** Asks the worker to close; kills it if it has not exited within `timeoutMs`. */
  async close(timeoutMs: number): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.send({ type: 'close' });
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }
}

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

async function deleteKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>)
      if (keys.length > 0) await redis.unlink(...keys);
  } finally {
    redis.disconnect();
  }
}

/**
 * Starts the build in `workers` processes on `services`; resolves once every worker serves.
 *
 * @example
 * const host = await workersHost(context, 4, serviceUrls(process.env));
 */
export async function workersHost(
  context: HostContext,
  workers: number,
  services: ServiceUrls,
): Promise<BuildHost> {
  const run = `lab_${process.pid}_${Date.now().toString(36)}_${context.build}`;
  const stream = { url: services.nats, stream: run };
  const redisPrefix = `${run}:`;
  await adminQuery(services.postgres, `CREATE SCHEMA "${run}"`);
  const db = postgresDatabase(services.postgres, run, 4);
  const bank = await createBank(db, context.accounts);
  await createNatsStream(stream);
  const truth = await serveGroundTruth(context.processor, context.warehouse);
  const pool = Array.from({ length: workers }, (_, index) => new Worker(`worker-${index + 1}`));

  const close = async () => {
    await Promise.all(pool.map((worker) => worker.close(10_000)));
    await truth.close();
    await db.close();
    await adminQuery(services.postgres, `DROP SCHEMA "${run}" CASCADE`).catch(() => undefined);
    await natsBacklog(stream, true).catch(() => undefined);
    await deleteKeys(services.redis, redisPrefix).catch(() => undefined);
  };

  let urls: string[];
  try {
    const ready = pool.map((worker) => worker.next('ready', 60_000));
    for (const [index, worker] of pool.entries())
      worker.send({
        type: 'init',
        build: context.build,
        source: worker.name,
        seed: context.seed * 100 + index,
        durationMs: context.timeline.durationMs,
        services,
        schema: run,
        redisPrefix,
        stream: run,
        groundTruthUrl: truth.url,
        accounts: context.accounts,
        tenantRatePerSecond: context.tenantRatePerSecond,
        resetTimeoutMs: context.resetTimeoutMs,
      });
    urls = (await Promise.all(ready)).map((message) => message.url);
  } catch (error) {
    await close();
    throw error;
  }

  return {
    urls,
    bank,
    start(atMs) {
      for (const worker of pool) worker.send({ type: 'start', atMs });
    },
    async settle(timeoutMs) {
      const drained = pool.map((worker) => worker.next('drained', timeoutMs + 5_000));
      for (const worker of pool) worker.send({ type: 'drain', timeoutMs });
      const reports = await Promise.all(drained);
      // A redelivery (a lost ack) may still be on its way to some worker: wait for the stream too.
      await waitFor(async () => (await natsBacklog(stream)) === 0, timeoutMs, 200);
      const stats: BuildStats = sumStats(reports.map((report) => report.stats));
      const series: RunSeries[] = reports.map((report) => report.series);
      return { stats, series };
    },
    close,
  };
}
