/**
 * The idempotency store conformance suite, unchanged, against the PostgreSQL store on a real server
 * (`pg`, a schema per scenario) and on PGlite (one embedded instance for the file, a fresh schema
 * per scenario). Time is the database's: `elapse` is a real sleep.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import type { PostgresStores } from '../../src/stores/postgres/index.js';
import { idempotencyStoreConformance } from '../../src/testing/idempotency-conformance.js';
import { serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

/** The conformance environment on a store set: the database's time passes for real. */
function environment(stores: PostgresStores) {
  return {
    store: stores.idempotency,
    elapse: (ms: number) => sleep(ms),
    slackMs: 100,
    close: () => stores.close(),
  };
}

pg.describe('idempotency store on PostgreSQL (pg)', () => {
  idempotencyStoreConformance(
    'PostgreSQL store (pg, server clock)',
    async () => environment(await serverStores(pg)),
    { describe, it },
  );
});

describe('idempotency store on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  idempotencyStoreConformance(
    'PostgreSQL store (PGlite, embedded)',
    async () => environment(await embedded.stores()),
    { describe, it },
  );
});
