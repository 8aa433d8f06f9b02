/**
 * The PostgreSQL saga log: `postgresStores(db).sagaLog`. Two tables (`<schema>.saga_runs`,
 * `<schema>.saga_steps`), one statement per operation, time from `clock_timestamp()`. See
 * `saga/store.ts` for the contract it keeps and `saga-log-sql.ts` for the statements.
 */
import type { Clock } from '../../core/clock.js';
import { StoreUnavailableError } from '../../core/errors.js';
import { textValue } from '../../core/validate.js';
import { leaseMs } from '../../lock/memory-store.js';
import { checkChange, checkLease, jsonText } from '../../saga/log-values.js';
import type { ClaimedRun, LoggedStep, SagaChange, SagaLease, SagaLog } from '../../saga/store.js';
import type { Database } from './database.js';
import { quoteIdent } from './identifiers.js';
import { REAP_INTERVAL_MS, Reaper, reapInBatches } from './reaper.js';
import { type SagaLogSql, sagaLogSql } from './saga-log-sql.js';

/** Most claim statements one `claim` runs when the run it picked keeps changing under it. */
const CLAIM_ATTEMPTS = 5;

interface ClaimRow {
  readonly id: string | null;
  readonly input: string;
  readonly status: ClaimedRun['status'];
  /** `[{ step, position, state, output }]` ordered by position, as JSON text. */
  readonly steps: string;
}

/** A step as the claim statement returns it (`output` NULL when none was recorded). */
interface StepRow {
  readonly step: string;
  readonly position: number;
  readonly state: LoggedStep['state'];
  readonly output: string | null;
}

/** The parameters $1 to $4 of a statement on `lease`'s run. */
const held = (lease: SagaLease): unknown[] => [lease.name, lease.id, lease.owner, lease.leaseMs];

/**
 * The saga log in PostgreSQL (or PGlite), from `postgresStores(db).sagaLog`; pass it as
 * `saga({ name, log })`. Keeps the contract of `SagaLog` (see `bulwark`'s `saga/store.ts`):
 *
 * - `start` is one `INSERT … ON CONFLICT DO NOTHING`: an id the log holds (running, or finished
 *   and still kept) is refused.
 * - `write` and `renew` are one statement each that extends the lease only where the name, id and
 *   owner match an unfinished run, and applies the change in the same statement only if it did: a
 *   step is upserted (its output kept when none is given), a status set (a final one clears the
 *   owner and records `finished_at`). A former owner's write after a claim changes nothing.
 * - `claim` is one statement: the unfinished run of the name whose lease ended first, taken with
 *   `FOR UPDATE SKIP LOCKED`, so that concurrent claims from any process each take a different run;
 *   it returns the run with its steps (ordered by position). When the run it picked was written
 *   after the statement's snapshot (a former owner's last write), it takes nothing and runs again
 *   (at most 5 times, then `StoreUnavailableError`), so that the steps it returns hold that write.
 *
 * Names, ids, owners and step names are `text`: non-empty, well-formed, and without U+0000; inputs
 * and outputs are JSON text, well-formed and without U+0000, stored as `text` byte for byte. Those
 * and every other argument the memory log refuses are a `TypeError`, before anything is sent.
 * Every call fails with `StoreUnavailableError` when the database fails or misses the store set's
 * deadline (`timeoutMs`). Completed and compensated runs are deleted with their steps once
 * finished for 24 hours (`SAGA_RETENTION_MS`), in batches every minute, from the first `start`
 * until `stores.close()`; and by {@link reap}. Runs that need attention are kept until you delete
 * them.
 *
 * @example
 * const stores = postgresStores(pool);
 * await stores.migrate();
 * const order = saga<Order>({ name: 'order', log: stores.sagaLog });
 * await order.recover(); // at start-up: finishes the runs a crashed process left
 */
export class PostgresSagaLog implements SagaLog {
  /** The store set's deadline of one call, in ms (a saga's `leaseMs` must be at least 3 × this). */
  readonly timeoutMs: number;
  private readonly sql: SagaLogSql;
  private readonly reaper: Reaper;

  /** @internal Built by `postgresStores`. */
  constructor(
    private readonly db: Database,
    schema: string,
    clock: Clock,
    timeoutMs: number,
  ) {
    this.timeoutMs = timeoutMs;
    this.sql = sagaLogSql(quoteIdent(schema));
    this.reaper = new Reaper(clock, REAP_INTERVAL_MS, () => this.reap());
  }

  async start(lease: SagaLease, input: string): Promise<boolean> {
    checkLease(lease);
    jsonText('input', input);
    this.reaper.start();
    const rows = await this.db.query(this.sql.start, [...held(lease), input]);
    return rows.length === 1;
  }

  async write(lease: SagaLease, change: SagaChange): Promise<boolean> {
    checkLease(lease);
    checkChange(change);
    if ('status' in change) {
      const rows = await this.db.query(this.sql.writeStatus, [...held(lease), change.status]);
      return rows.length === 1;
    }
    const { step, position, state, output } = change;
    const rows = await this.db.query<{ n: number }>(this.sql.writeStep, [
      ...held(lease),
      step,
      position,
      state,
      output ?? null,
    ]);
    // Stryker disable next-line OptionalChaining: the statement ends in `SELECT count(*)`, so it always returns one row
    return rows[0]?.n === 1;
  }

  async renew(lease: SagaLease): Promise<boolean> {
    checkLease(lease);
    const rows = await this.db.query(this.sql.renew, held(lease));
    return rows.length === 1;
  }

  async claim(name: string, owner: string, ms: number): Promise<ClaimedRun | undefined> {
    textValue('name', name);
    textValue('owner', owner);
    leaseMs('leaseMs', ms);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const [row] = await this.db.query<ClaimRow>(this.sql.claim, [name, owner, ms]);
      if (row === undefined) return undefined;
      if (row.id === null) continue; // the run changed since the statement's snapshot: decide again
      const steps = (JSON.parse(row.steps) as StepRow[]).map(
        ({ step, position, state, output }): LoggedStep => ({
          step,
          position,
          state,
          output: output ?? undefined,
        }),
      );
      return { id: row.id, input: row.input, status: row.status, steps };
    }
    throw new StoreUnavailableError(
      `${this.db.what}: the claim of a saga run kept losing races (${CLAIM_ATTEMPTS} attempts)`,
    );
  }

  /**
   * Deletes the completed and compensated runs finished for longer than 24 hours
   * (`SAGA_RETENTION_MS`), with their steps, at most 1,000 per statement and 100 statements per
   * call; resolves with how many runs it deleted. Unfinished runs and runs that need attention are
   * never touched. Runs every minute by itself; call it yourself to clean up at a time of your
   * choosing.
   */
  reap(): Promise<number> {
    return reapInBatches(this.db, this.sql.reap);
  }

  /** @internal Stops the reaper (from `stores.close()`). */
  stop(): void {
    this.reaper.stop();
  }
}
