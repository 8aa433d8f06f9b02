/**
 * The PostgreSQL fixture: {@link usePostgres}, a schema per test, and pools and clients on it
 * that are ended (forcibly if need be) after the test.
 */
import { performance } from 'node:perf_hooks';
import type { Client, ClientConfig, Pool, PoolClient, PoolConfig } from 'pg';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import { destroySocket, forceEndClient, settlesWithin } from './pg-teardown.js';
import {
  databaseUrl,
  outsideTestError,
  postgresInfo,
  probePostgres,
  probeTimeoutMs,
  reportUnavailable,
  requireServices,
  type ServiceTarget,
  targetOf,
  unavailableError,
  uniqueToken,
} from './service-env.js';

/** Options of {@link PostgresService.pool} and {@link PostgresService.client}. */
export type PostgresOverrides = PoolConfig;

/**
 * PostgreSQL for one test file, from {@link usePostgres}.
 *
 * Every member except `available`, `url`, `target` and `describe` throws when PostgreSQL is not
 * available.
 */
export interface PostgresService {
  /** Whether PostgreSQL answered the probe; when false every suite of `describe` is skipped. */
  readonly available: boolean;
  /** The database URL ({@link databaseUrl}). */
  readonly url: string;
  /** Host and port of {@link PostgresService.url}, e.g. for `startFaultProxy({ target })`. */
  readonly target: ServiceTarget;
  /**
   * The current test's schema, `t_<random>`, created before the test and dropped (CASCADE)
   * after it. Pools from {@link PostgresService.pool} have it as their `search_path`.
   *
   * @throws Error outside a test
   */
  readonly schema: string;
  /**
   * Connection settings for the current test's schema: `{ connectionString: url, options:
   * '-c search_path=<schema>', ...overrides }` (your `options`, if any, are appended). Plain
   * data, so it can be handed to worker processes.
   *
   * To go through a fault proxy pass `{ connectionString: proxy.url(pg.url) }`: in `pg` a
   * connection string wins over `host`/`port`.
   *
   * @throws Error outside a test
   */
  config(overrides?: PostgresOverrides): PoolConfig;
  /**
   * A new `pg.Pool` on the current test's schema, ended after the test (idle and checked-out
   * clients; a client still checked out 500 ms later has its socket destroyed). A no-op `'error'` listener is
   * attached so an idle client dropped by a chaos test does not crash the run.
   *
   * @throws Error outside a test
   */
  pool(overrides?: PostgresOverrides): Pool;
  /**
   * A new, not yet connected `pg.Client` on the current test's schema, ended after the test.
   * A no-op `'error'` listener is attached.
   *
   * @throws Error outside a test
   */
  client(overrides?: ClientConfig): Client;
  /** The file's shared pool (no test schema on its `search_path`), used for setup and cleanup. */
  admin(): Pool;
  /** `describe`, skipped when PostgreSQL is not available. */
  describe(name: string, factory: () => void | Promise<void>): void;
}

/** A pg Pool whose clients are known, so ending it can be forced. */
class TrackedPool {
  readonly clients = new Set<PoolClient>();
  constructor(readonly pool: Pool) {
    pool.on('connect', (client) => this.clients.add(client));
    pool.on('remove', (client) => this.clients.delete(client));
    pool.on('error', () => {});
  }

  /** Ends the pool (or waits for an end already under way); after `graceMs` destroys its sockets. */
  async end(graceMs: number): Promise<void> {
    if (this.pool.ended) return;
    const ended = this.pool.ending ? this.#whenEnded(graceMs + 100) : this.pool.end();
    if (await settlesWithin(ended, graceMs)) return;
    process.stderr.write(
      `[test/support] a pg pool did not end within ${graceMs} ms (a client still checked out, or a paused proxy); destroying its sockets\n`,
    );
    for (const client of this.clients) {
      // A checked-out client has no pool listener: its "terminated" error would be uncaught.
      client.on('error', () => {});
      destroySocket(client);
    }
  }

  async #whenEnded(limitMs: number): Promise<void> {
    const giveUpAt = performance.now() + limitMs;
    while (!this.pool.ended && performance.now() < giveUpAt) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** Schema names are generated, but quote them anyway. */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

class PostgresFixture implements PostgresService {
  readonly url = databaseUrl;
  readonly target = targetOf(databaseUrl, 5432);
  #schema: string | undefined;
  #pools: TrackedPool[] = [];
  #clients: Client[] = [];
  #admin: Pool | undefined;

  constructor(readonly available: boolean) {
    if (available) this.#registerHooks();
  }

  #registerHooks(): void {
    beforeEach(async () => {
      if (this.#schema !== undefined) {
        throw new Error(
          'usePostgres(): tests of this file run concurrently; its helpers need one test at a time',
        );
      }
      const schema = `t_${uniqueToken()}`;
      await this.admin().query(`CREATE SCHEMA ${quoteIdent(schema)}`);
      this.#schema = schema;
    });
    afterEach(async () => {
      const schema = this.#schema;
      const pools = this.#pools;
      const clients = this.#clients;
      this.#schema = undefined;
      this.#pools = [];
      this.#clients = [];
      await Promise.all([
        ...pools.map((pool) => pool.end(500)),
        ...clients.map((client) => forceEndClient(client, 500)),
      ]);
      if (schema !== undefined)
        await this.admin().query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
    });
    afterAll(async () => {
      const admin = this.#admin;
      this.#admin = undefined;
      if (admin !== undefined) await new TrackedPool(admin).end(1_000);
    });
  }

  #check(): void {
    if (!this.available) throw unavailableError('PostgreSQL');
  }

  get schema(): string {
    this.#check();
    if (this.#schema === undefined) throw outsideTestError('pg.schema');
    return this.#schema;
  }

  config(overrides: PostgresOverrides = {}): PoolConfig {
    const searchPath = `-c search_path=${this.schema}`;
    return {
      connectionString: this.url,
      ...overrides,
      options: overrides.options ? `${searchPath} ${overrides.options}` : searchPath,
    };
  }

  pool(overrides?: PostgresOverrides): Pool {
    const pool = new pg.Pool(this.config(overrides));
    this.#pools.push(new TrackedPool(pool));
    return pool;
  }

  client(overrides?: ClientConfig): Client {
    const client = new pg.Client(this.config(overrides));
    client.on('error', () => {});
    this.#clients.push(client);
    return client;
  }

  admin(): Pool {
    this.#check();
    if (this.#admin === undefined) {
      this.#admin = new pg.Pool({
        connectionString: this.url,
        max: 2,
        connectionTimeoutMillis: 5_000,
        options: '-c lock_timeout=5000',
      });
      this.#admin.on('error', () => {});
    }
    return this.#admin;
  }

  describe(name: string, factory: () => void | Promise<void>): void {
    describe.skipIf(!this.available)(name, factory);
  }
}

/**
 * Declares that the calling test file needs PostgreSQL. Call it once, at the top level of the
 * file, and wrap the suites in `pg.describe(...)`.
 *
 * Probes {@link databaseUrl} (≤ {@link probeTimeoutMs}). Reachable: registers per-test isolation
 * (a fresh {@link PostgresService.schema} created before each test; the test's pools and clients
 * ended and the schema dropped with CASCADE after it). Unreachable: prints a loud notice on
 * stderr and returns a service whose `describe` skips.
 *
 * @throws Error when PostgreSQL is unreachable and {@link requireServices} is set
 * @example
 * ```ts
 * const pg = await usePostgres();
 * pg.describe('outbox on PostgreSQL', () => {
 *   it('migrates', async () => { await postgresStores(pg.pool(), { schema: pg.schema }).migrate(); });
 * });
 * ```
 */
export async function usePostgres(): Promise<PostgresService> {
  const probe = await probePostgres();
  if (!probe.reachable) reportUnavailable(postgresInfo, probe.reason);
  return new PostgresFixture(probe.reachable);
}
