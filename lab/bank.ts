/**
 * The accounts database of one build: balances, the ledger of credits, and the notifications the
 * event consumer sends. The SQL both builds share; how they use it (locked and fenced, or not) is
 * their own. The database itself is an embedded PGlite or a PostgreSQL schema (lab/database.ts).
 */

import type { PostgresTransaction } from '../src/stores/postgres/index.js';
import type { LabDatabase } from './database.js';

/** Anything that runs a statement: the database itself or one of its transactions. */
export type Sql = PostgresTransaction;

/** One account as `GET /accounts/:id` answers it. */
export interface Account {
  readonly id: string;
  readonly balance: number;
}

/** A credit to write: the payment that paid it and its amount. */
export interface Credit {
  readonly accountId: string;
  readonly paymentId: string;
  readonly cents: number;
}

/** The database's state at the end of a run, for the checks. */
export interface BankSnapshot {
  /** Stored balance per account. */
  readonly balances: ReadonlyMap<string, number>;
  /** Sum of the ledger's credits per account. */
  readonly ledgerSums: ReadonlyMap<string, number>;
  /** Ledger entries per payment id. */
  readonly credits: ReadonlyMap<string, number>;
  /** Credited cents per payment id (all its entries). */
  readonly creditedCents: ReadonlyMap<string, number>;
  /** Notifications sent per payment id (the consumer's effect). */
  readonly notifications: ReadonlyMap<string, number>;
}

/** An open accounts database and the account ids it holds. */
export interface Bank {
  readonly db: LabDatabase;
  readonly accountIds: readonly string[];
}

/** The ids of the lab's `accounts` accounts. */
export const accountIdsOf = (accounts: number): string[] =>
  Array.from({ length: accounts }, (_, index) => `acct-${index + 1}`);

/**
 * Creates the lab's tables in `db` (its current schema) with `accounts` accounts at balance 0.
 *
 * @example
 * const bank = await createBank(await pgliteDatabase(), 12);
 * await readAccount(bank.db, bank.accountIds[0]!);
 */
export async function createBank(db: LabDatabase, accounts: number): Promise<Bank> {
  for (const statement of [
    'CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0)',
    'CREATE TABLE ledger (id serial PRIMARY KEY, account_id text NOT NULL, payment_id text NOT NULL, cents bigint NOT NULL)',
    'CREATE INDEX ledger_payment ON ledger (payment_id)',
    'CREATE TABLE notifications (id serial PRIMARY KEY, payment_id text NOT NULL, event_id text NOT NULL)',
  ])
    await db.query(statement);
  const accountIds = accountIdsOf(accounts);
  for (const id of accountIds) await db.query('INSERT INTO accounts (id) VALUES ($1)', [id]);
  return { db, accountIds };
}

/** The account, or `undefined` when there is none. */
export async function readAccount(sql: Sql, id: string): Promise<Account | undefined> {
  const { rows } = await sql.query<{ balance: string | number }>(
    'SELECT balance FROM accounts WHERE id = $1',
    [id],
  );
  const row = rows[0];
  return row === undefined ? undefined : { id, balance: Number(row.balance) };
}

/** Sets an account's balance (the write half of a read-modify-write). */
export async function writeBalance(sql: Sql, id: string, balance: number): Promise<void> {
  await sql.query('UPDATE accounts SET balance = $2 WHERE id = $1', [id, balance]);
}

/** Appends a credit to the ledger. */
export async function insertCredit(sql: Sql, credit: Credit): Promise<void> {
  await sql.query('INSERT INTO ledger (account_id, payment_id, cents) VALUES ($1, $2, $3)', [
    credit.accountId,
    credit.paymentId,
    credit.cents,
  ]);
}

/** Whether the ledger already holds a credit of this payment. */
export async function isCredited(sql: Sql, paymentId: string): Promise<boolean> {
  const { rows } = await sql.query('SELECT 1 FROM ledger WHERE payment_id = $1 LIMIT 1', [paymentId]);
  return rows.length > 0;
}

/** Records that the consumer notified the account holder of a payment. */
export async function insertNotification(sql: Sql, paymentId: string, eventId: string): Promise<void> {
  await sql.query('INSERT INTO notifications (payment_id, event_id) VALUES ($1, $2)', [paymentId, eventId]);
}

async function grouped(db: Sql, text: string): Promise<Map<string, number>> {
  const { rows } = await db.query<{ k: string; v: string | number }>(text);
  return new Map(rows.map((row) => [row.k, Number(row.v)]));
}

/** Reads what the checks need from the database. */
export async function snapshotBank(db: Sql): Promise<BankSnapshot> {
  return {
    balances: await grouped(db, 'SELECT id AS k, balance AS v FROM accounts'),
    ledgerSums: await grouped(db, 'SELECT account_id AS k, sum(cents) AS v FROM ledger GROUP BY account_id'),
    credits: await grouped(db, 'SELECT payment_id AS k, count(*) AS v FROM ledger GROUP BY payment_id'),
    creditedCents: await grouped(
      db,
      'SELECT payment_id AS k, sum(cents) AS v FROM ledger GROUP BY payment_id',
    ),
    notifications: await grouped(
      db,
      'SELECT payment_id AS k, count(*) AS v FROM notifications GROUP BY payment_id',
    ),
  };
}
