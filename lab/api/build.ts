/**
 * The seam between the lab's two builds of the payments API: what a build decides (its middleware
 * and how it pays, orders and reads) and what it is given (its own collaborators). The routes'
 * plumbing (lab/api/server.ts) is the same for both.
 */
import type { Middleware } from '../../src/http/index.js';
import type { RedisStores } from '../../src/stores/redis/index.js';
import type { Account, Bank } from '../bank.js';
import type { Broker } from '../broker.js';
import type { CardProcessor } from '../processor.js';
import type { SeriesRecorder } from '../series.js';
import type { Timeline } from '../timeline.js';
import type { Warehouse } from '../warehouse.js';

/** `POST /payments`: credit an account by charging a card. `paymentId` is the client's own id. */
export interface PaymentInput {
  readonly paymentId: string;
  readonly accountId: string;
  readonly cents: number;
  readonly card: string;
}

/** `POST /orders`: reserve stock, charge, ship. */
export interface OrderInput {
  readonly orderId: string;
  readonly sku: string;
  readonly cents: number;
  readonly card: string;
  readonly address: string;
}

/** What a build reports about itself at the end of a run. */
export interface BuildStats {
  /** Breaker state changes around the card processor (0 without a breaker). */
  readonly breakerTransitions: number;
  /** Calls the open breaker refused without reaching the processor. */
  readonly breakerRefusals: number;
  /** Requests refused by load shedding. */
  readonly shed: number;
  /** `GET /accounts/:id` reads that reached the database. */
  readonly accountReads: number;
}

/** The collaborators a build is given: its own, shared with nothing else. */
export interface BuildDeps {
  readonly seed: number;
  readonly timeline: Timeline;
  readonly bank: Bank;
  readonly broker: Broker;
  /** The card processor: in process, or the main process's over HTTP (its ledger stays there). */
  readonly processor: Pick<CardProcessor, 'charge' | 'refund'>;
  readonly warehouse: Omit<Warehouse, 'ledger'>;
  /** Where the build records its breaker's state changes (the report's timeline). */
  readonly series: SeriesRecorder;
  /** Names this process's breaker in the series (`'breaker'`, or the worker's name). */
  readonly source: string;
  /** Requests per second one tenant may make (the protected build's rate limit). */
  readonly tenantRatePerSecond: number;
  /** The breaker's reset timeout, scaled to the run. */
  readonly resetTimeoutMs: number;
  /**
   * When several processes serve the run: the Redis stores they share (rate limits, locks, the
   * cache's second layer) and the PostgreSQL schema of the bulwark stores. Unset: all in memory,
   * the stores in the bank's own (embedded) database.
   */
  readonly shared?: { readonly redis: RedisStores; readonly schema: string } | undefined;
}

/** One build of the API: where the two differ. */
export interface Build {
  readonly name: string;
  /** Middleware run before every route, in order (connect-style). */
  readonly middleware: readonly Middleware[];
  pay(input: PaymentInput): Promise<{ readonly paymentId: string; readonly chargeId: string }>;
  order(input: OrderInput): Promise<{ readonly orderId: string; readonly shipmentId: string }>;
  account(id: string): Promise<Account | undefined>;
  /** Resolves once every event of a committed payment has been published (or `timeoutMs` passed). */
  drain(timeoutMs: number): Promise<void>;
  stats(): BuildStats;
  close(): Promise<void>;
}
