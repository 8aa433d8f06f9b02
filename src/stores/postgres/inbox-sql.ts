/**
 * The statements of the PostgreSQL inbox on `<schema>.inbox` (one row per message a consumer
 * processed: its fingerprint and its handler's result as JSON text). All but the reaper's run on
 * the consumer's own transaction, so the row commits with the handler's writes or not at all.
 */
import { reapStatement, statementStart } from './sql.js';

/**
 * How long a processed message is remembered, in milliseconds (7 days): a redelivery within it is a
 * duplicate, one after it is processed again. It must exceed the longest time the broker may
 * redeliver a message (its retention, or how long a message may wait unacknowledged).
 *
 * @example
 * // A JetStream stream that keeps messages 14 days redelivers past the inbox's memory: shorten it.
 * assert(streamMaxAgeMs < INBOX_RETENTION_MS);
 */
export const INBOX_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** The SQL of the inbox for the table in `schema`. */
export interface InboxSql {
  /**
   * $1 consumer, $2 message id, $3 fingerprint (or NULL) → one row when inserted, none when the
   * message has a row. A row of a concurrent transaction not yet committed makes it wait for that
   * transaction: inserted if it rolled back, nothing if it committed.
   */
  readonly insert: string;
  /** $1 consumer, $2 message id, $3 result as JSON text (or NULL) → no rows. */
  readonly record: string;
  /** $1 consumer, $2 message id → the row's fingerprint and result, or no row. */
  readonly recorded: string;
  /** $1 batch size → one row (n): rows processed longer ago than {@link INBOX_RETENTION_MS}, deleted. */
  readonly reap: string;
}

/** The statements for the table in `schema` (already quoted). */
export function inboxSql(schema: string): InboxSql {
  const table = `${schema}.inbox`;
  const message = 'consumer = $1 AND message_id = $2';
  const expired = `processed_at < ${statementStart} - ${INBOX_RETENTION_MS} * interval '1 millisecond'`;
  return {
    insert: `INSERT INTO ${table} (consumer, message_id, fingerprint) VALUES ($1, $2, $3)
      ON CONFLICT (consumer, message_id) DO NOTHING RETURNING 1 AS inserted`,
    record: `UPDATE ${table} SET result = $3 WHERE ${message}`,
    recorded: `SELECT fingerprint, result FROM ${table} WHERE ${message}`,
    reap: reapStatement(table, expired, 'processed_at'),
  };
}
