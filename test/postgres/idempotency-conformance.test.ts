/**
 * The idempotency store conformance suite, unchanged, against the PostgreSQL store on a real server
 * (`pg`, a schema per scenario) and on PGlite (one embedded instance for the file, a fresh schema
 * per scenario). Time is the database's: `elapse` is a real sleep.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { postgresStores } from '../../src/stores/postgres/index.js';
import { idempotencyStoreConformance } from '../../src/testing/idempotency-conformance.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

pg.describe('idempotency store on PostgreSQL (pg)', () => {
  idempotencyStoreConformance(
    'PostgreSQL store (pg, server clock)',
    async () => {
      const stores = postgresStores(pg.pool(), { schema: pg.schema });
      await stores.migrate();
      return {
        store: stores.idempotency,
        elapse: (ms) => sleep(ms),
        slackMs: 100,
        close: () => stores.close(),
      };
    },
    { describe, it },
  );
});

describe('idempotency store on PGlite', () => {
  let db: PGlite;
  let scenario = 0;
  beforeAll(async () => {
    db = new PGlite();
    await db.waitReady;
  }, 30_000);
  afterAll(() => db.close());

  idempotencyStoreConformance(
    'PostgreSQL store (PGlite, embedded)',
    async () => {
      scenario += 1;
      const stores = postgresStores(db, { schema: `conformance_${scenario}` });
      await stores.migrate();
      return {
        store: stores.idempotency,
        elapse: (ms) => sleep(ms),
        slackMs: 100,
        close: () => stores.close(),
      };
    },
    { describe, it },
  );
});
