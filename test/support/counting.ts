/**
 * Databases whose statements are counted (they still run): a `pg` Pool whose clients record each
 * statement, and a PGlite wrapper that records those sent through `query` and its transactions'
 * `query` (PGlite's own BEGIN and COMMIT are not sent through them, so they are not counted).
 */
import type { PGlite } from '@electric-sql/pglite';
import type { Pool, PoolClient } from 'pg';
import type { PGliteLike } from '../../src/stores/postgres/index.js';

/** A database and the statements sent to it so far, in order. */
export interface Counted<D> {
  readonly db: D;
  readonly statements: string[];
}

/** `pool`, with every statement of its clients (and `pool.query`) recorded. */
export function countingPool(pool: Pool): Counted<Pool> {
  const statements: string[] = [];
  const wrapClient = (client: PoolClient): PoolClient =>
    new Proxy(client, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === 'query' && typeof value === 'function') {
          return (text: string, ...rest: unknown[]) => {
            statements.push(text);
            return value.call(target, text, ...rest);
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const db = new Proxy(pool, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'connect') return () => target.connect().then(wrapClient);
      if (property === 'query') {
        return (text: string, ...rest: unknown[]) => {
          statements.push(text);
          return (value as (...args: unknown[]) => unknown).call(target, text, ...rest);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { db, statements };
}

/** `db`, with every statement sent through `query` and its transactions' `query` recorded. */
export function countingPGlite(db: PGlite): Counted<PGliteLike> {
  const statements: string[] = [];
  const wrapped: PGliteLike = {
    query: <T>(text: string, params?: unknown[]) => {
      statements.push(text);
      return db.query<T>(text, params);
    },
    transaction: (callback) =>
      db.transaction((tx) =>
        callback({
          query: <R>(text: string, params?: unknown[]) => {
            statements.push(text);
            return tx.query<R>(text, params);
          },
        }),
      ),
    listen: (channel, callback) => db.listen(channel, callback),
  };
  return { db: wrapped, statements };
}
