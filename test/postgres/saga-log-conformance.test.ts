/**
 * The saga log conformance suite, unchanged, against the PostgreSQL saga log on a real server
 * (`pg`, a schema per scenario) and on PGlite (one embedded instance for the file, a fresh schema
 * per scenario). Time is the database's: `elapse` is a real sleep.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'vitest';
import type { PostgresStores } from '../../src/stores/postgres/index.js';
import { sagaLogConformance } from '../../src/testing/saga-log-conformance.js';
import { serverStores, useEmbeddedPostgres } from '../support/postgres-stores.js';
import { usePostgres } from '../support/services.js';

const pg = await usePostgres();

/** The conformance environment on a store set: the database's time passes for real. */
function environment(stores: PostgresStores) {
  return {
    log: stores.sagaLog,
    elapse: (ms: number) => sleep(ms),
    slackMs: 100,
    close: () => stores.close(),
  };
}

pg.describe('saga log on PostgreSQL (pg)', () => {
  sagaLogConformance(
    'PostgreSQL saga log (pg, server clock)',
    async () => environment(await serverStores(pg)),
    {
      describe,
      it,
    },
  );
});

describe('saga log on PGlite', () => {
  const embedded = useEmbeddedPostgres();
  sagaLogConformance(
    'PostgreSQL saga log (PGlite, embedded)',
    async () => environment(await embedded.stores()),
    {
      describe,
      it,
    },
  );
});
