/**
 * The statements of the PostgreSQL saga log, one per operation, for the tables in `schema`
 * (quoted): `saga_runs` (one row per run, with its lease) and `saga_steps` (one row per step of a
 * run, deleted with it). Time is always `clock_timestamp()`. A write is applied only if it renews
 * the lease of an unfinished run its owner holds, in the same statement, so a writer whose run was
 * claimed changes nothing.
 *
 * Every statement takes the lease as $1 name, $2 id, $3 owner, $4 leaseMs (claim and reap excepted).
 */
import { SAGA_RETENTION_MS } from '../../saga/store.js';
import { msFromNow, reapStatement, statementStart } from './sql.js';

/** The SQL of each operation on `<schema>.saga_runs` and `<schema>.saga_steps`. */
export interface SagaLogSql {
  /** The lease, $5 input → one row when the run was started. */
  readonly start: string;
  /** The lease, $5 step, $6 position, $7 state, $8 output (or NULL to keep the recorded one) → one row (n). */
  readonly writeStep: string;
  /** The lease, $5 status → one row when written. */
  readonly writeStatus: string;
  /** The lease → one row when renewed. */
  readonly renew: string;
  /**
   * $1 name, $2 owner, $3 leaseMs → no row when no run is claimable; one row (id, input, status,
   * steps as JSON text) when one was claimed; one row whose id is NULL when the run picked changed
   * after the statement's snapshot (nothing claimed: run the statement again).
   */
  readonly claim: string;
  /** $1 batch size → one row (n). */
  readonly reap: string;
}

const unfinished = `status IN ('running', 'compensating')`;

/** The statements for the tables in `schema` (already quoted). */
export function sagaLogSql(schema: string): SagaLogSql {
  const runs = `${schema}.saga_runs`;
  const steps = `${schema}.saga_steps`;
  const held = `name = $1 AND id = $2 AND owner = $3 AND ${unfinished}`;
  const lease = msFromNow('$4');
  const final = `$5::text IN ('completed', 'compensated', 'attention')`;
  const retained = `status IN ('completed', 'compensated')
    AND finished_at <= ${statementStart} - ${SAGA_RETENTION_MS} * interval '1 millisecond'`;
  return {
    start: `INSERT INTO ${runs} (name, id, input, status, owner, expires_at)
      VALUES ($1, $2, $5, 'running', $3, ${lease})
      ON CONFLICT (name, id) DO NOTHING RETURNING 1 AS started`,
    // The step is written only from the run's row the lease update returned: none, nothing written.
    writeStep: `WITH run AS (
        UPDATE ${runs} SET expires_at = ${lease} WHERE ${held} RETURNING name, id
      ), step AS (
        INSERT INTO ${steps} AS s (name, saga_id, step, position, state, output)
        SELECT name, id, $5::text, $6::int, $7::text, $8::text FROM run
        ON CONFLICT (name, saga_id, step) DO UPDATE SET position = excluded.position,
          state = excluded.state, output = coalesce(excluded.output, s.output), updated_at = clock_timestamp()
      )
      SELECT count(*)::int AS n FROM run`,
    writeStatus: `UPDATE ${runs} SET status = $5::text, expires_at = ${lease},
        owner = CASE WHEN ${final} THEN NULL ELSE owner END,
        finished_at = CASE WHEN ${final} THEN clock_timestamp() END
      WHERE ${held} RETURNING 1 AS written`,
    renew: `UPDATE ${runs} SET expires_at = ${lease} WHERE ${held} RETURNING 1 AS renewed`,
    // Concurrent claims skip the runs another one locked, and a run changed by a commit since the
    // statement started is checked again on its new version (READ COMMITTED): each run goes to one
    // claimant. The steps are read from the statement's snapshot, so a run whose row changed after
    // it (an owner's write landing just before its new lease ended too) is left as it is: the row
    // with a NULL id tells the caller to decide again on a new snapshot, which holds that write.
    // A lease ended is a lease ended by now (the check under the lock sees the run as it is then);
    // the bound on the statement's start only lets the index stop the scan after the leases ending
    // within a second of it, instead of passing over every healthy run (see `statementStart`).
    claim: `WITH picked AS (
        SELECT name, id, expires_at FROM ${runs}
        WHERE name = $1 AND ${unfinished} AND expires_at <= clock_timestamp()
          AND expires_at < ${statementStart} + interval '1 second'
        ORDER BY expires_at LIMIT 1 FOR UPDATE SKIP LOCKED
      ), taken AS (
        UPDATE ${runs} AS r SET owner = $2, expires_at = ${msFromNow('$3')} FROM picked
        WHERE r.name = picked.name AND r.id = picked.id
          AND picked.expires_at = (SELECT expires_at FROM ${runs} WHERE name = picked.name AND id = picked.id)
        RETURNING r.name, r.id, r.input, r.status
      )
      SELECT t.id, t.input, t.status, (
          SELECT coalesce(json_agg(json_build_object('step', s.step, 'position', s.position,
            'state', s.state, 'output', s.output) ORDER BY s.position), '[]')::text
          FROM ${steps} AS s WHERE s.name = t.name AND s.saga_id = t.id
        ) AS steps
      FROM picked LEFT JOIN taken AS t ON true`,
    reap: reapStatement(runs, retained, 'finished_at'),
  };
}
