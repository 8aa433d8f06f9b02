/**
 * The servers a store benchmark runs against: a Redis client (and an admin connection that cleans
 * up), a PostgreSQL pool with every statement counted where it leaves, and one report section per
 * backend.
 */
import { Redis } from 'ioredis';
import pg from 'pg';

/** Deletes every key under `prefix` (a benchmark's own keys on the shared Redis). */
export async function deleteKeys(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
    cursor = next;
    if (found.length > 0) await client.unlink(...found);
  } while (cursor !== '0');
}

/** Counts every command `client` sends from now on (where it leaves: a script's own calls are not counted). */
export function countCommands(client: Redis): () => number {
  let sent = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<typeof send>) => {
    sent += 1;
    return send(...args);
  }) as typeof client.sendCommand;
  return () => sent;
}

/** A connected Redis client and an admin connection; `close()` deletes every key under `prefix`. */
export async function benchRedis(prefix: string): Promise<{
  readonly client: Redis;
  readonly admin: Redis;
  close(): Promise<void>;
}> {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1_000 });
  client.on('error', () => {});
  await client.connect();
  const admin = client.duplicate();
  return {
    client,
    admin,
    close: async () => {
      await deleteKeys(admin, prefix);
      client.disconnect();
      admin.disconnect();
    },
  };
}

/**
 * A pool of 32 on the shared PostgreSQL, and a count of every statement any `pg` client of this
 * process sends (`pg_stat_statements` is not loaded there); `close()` ends the pool and the count.
 */
export function benchPostgres(): { readonly pool: pg.Pool; statements(): number; close(): Promise<void> } {
  const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  const pool = new pg.Pool({ connectionString: url, max: 32, connectionTimeoutMillis: 1_000 });
  pool.on('error', () => {});
  let statements = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    statements += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    pool,
    statements: () => statements,
    close: async () => {
      pg.Client.prototype.query = query;
      await pool.end();
    },
  };
}

/**
 * One section per backend, `<name>:` then what `render` makes of it, opened in turn and closed
 * after; a backend that cannot be opened or measured is reported as skipped.
 */
export async function backendSections<T extends { close(): Promise<void> }>(
  backends: readonly (readonly [name: string, open: () => Promise<T>])[],
  render: (opened: T) => Promise<string>,
): Promise<string[]> {
  const sections: string[] = [];
  for (const [name, open] of backends) {
    let opened: T | undefined;
    try {
      opened = await open();
      sections.push(`${name}:\n\n${await render(opened)}`);
    } catch (error) {
      sections.push(`${name} unavailable (${(error as Error).message}): skipped.`);
    } finally {
      await opened?.close();
    }
  }
  return sections;
}
