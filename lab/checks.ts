/**
 * The checks of a run, computed from ground truth only: what the processor really charged and
 * refunded, what the warehouse really reserved and shipped, and what the build's database holds
 * (balances, ledger, notifications). Nothing here trusts what the API answered.
 */
import type { BuildStats } from './api/build.js';
import type { BankSnapshot } from './bank.js';
import type { LoadStats } from './load/stats.js';
import type { ProcessorLedger } from './processor.js';
import type { RunSeries } from './series.js';
import type { WarehouseLedger } from './warehouse.js';

/** Everything recorded about one build's run. */
export interface BuildRun {
  readonly name: string;
  readonly load: LoadStats;
  readonly processor: ProcessorLedger;
  readonly warehouse: WarehouseLedger;
  readonly bank: BankSnapshot;
  readonly stats: BuildStats;
  /** Per-second series for the report's charts. */
  readonly series: RunSeries;
}

/** What the checks found in one run. */
export interface Findings {
  /** Charges beyond the first for one payment or order (net of refunds). */
  readonly duplicateCharges: number;
  readonly chargesExecuted: number;
  /** Payments and orders charged at least once (net of refunds). */
  readonly uniqueCharged: number;
  /** Processor calls per payment or order it was asked about: retry amplification. */
  readonly callsPerPayment: number;
  /** Payments credited to an account (each should have had its event handled). */
  readonly creditedPayments: number;
  /** Credited payments whose `payment.succeeded` event never reached the consumer. */
  readonly lostEvents: number;
  /** Extra notifications: an event handled more than once. */
  readonly eventsHandledTwice: number;
  /** Accounts whose balance differs from the sum of their ledger. */
  readonly accountsOff: number;
  /** Payments charged and not credited exactly once, or credited without a charge. */
  readonly paymentsMismatched: number;
  /** Orders whose charge, stock and shipment disagree (e.g. charged but not shipped). */
  readonly ordersInconsistent: number;
}

/** One invariant of the protected build and whether it held. */
export interface Invariant {
  readonly name: string;
  readonly held: boolean;
  readonly detail: string;
}

const count = (map: ReadonlyMap<string, number>, key: string) => map.get(key) ?? 0;
const isPayment = (reference: string) => !reference.startsWith('ord-');

/**
 * Computes the findings of a run.
 *
 * @example
 * const findings = check(run);
 * if (findings.duplicateCharges > 0) console.log('charged twice');
 */
export function check(run: BuildRun): Findings {
  const { processor, warehouse, bank } = run;
  let duplicateCharges = 0;
  let chargesExecuted = 0;
  let uniqueCharged = 0;
  let paymentsMismatched = 0;
  for (const [reference, charges] of processor.charges) {
    const net = charges - count(processor.refunds, reference);
    chargesExecuted += charges;
    if (net >= 1) uniqueCharged++;
    duplicateCharges += Math.max(0, net - 1);
    if (isPayment(reference) && count(bank.credits, reference) !== Math.min(net, 1)) paymentsMismatched++;
  }
  for (const reference of bank.credits.keys()) if (!processor.charges.has(reference)) paymentsMismatched++;

  let lostEvents = 0;
  let eventsHandledTwice = 0;
  for (const paymentId of bank.credits.keys()) {
    const handled = count(bank.notifications, paymentId);
    if (handled === 0) lostEvents++;
    eventsHandledTwice += Math.max(0, handled - 1);
  }

  let accountsOff = 0;
  for (const [account, balance] of bank.balances)
    if (balance !== count(bank.ledgerSums, account)) accountsOff++;

  const orders = new Set([...processor.charges.keys()].filter((reference) => !isPayment(reference)));
  for (const order of warehouse.held.keys()) orders.add(order);
  for (const order of warehouse.shipped.keys()) orders.add(order);
  let ordersInconsistent = 0;
  for (const order of orders) {
    const shipped = count(warehouse.shipped, order);
    const net = count(processor.charges, order) - count(processor.refunds, order);
    if (shipped > 1 || net !== shipped || count(warehouse.held, order) !== shipped) ordersInconsistent++;
  }

  return {
    duplicateCharges,
    chargesExecuted,
    uniqueCharged,
    callsPerPayment: processor.references === 0 ? 0 : processor.calls / processor.references,
    creditedPayments: bank.credits.size,
    lostEvents,
    eventsHandledTwice,
    accountsOff,
    paymentsMismatched,
    ordersInconsistent,
  };
}

/**
 * The invariants the protected build must keep (the lab's exit code): no duplicate charge, no lost
 * event, balances consistent with the ledger and the processor, orders consistent.
 *
 * @example
 * const failed = invariants(check(run)).filter((invariant) => !invariant.held);
 */
export function invariants(findings: Findings): Invariant[] {
  return [
    {
      name: 'no duplicate charge',
      held: findings.duplicateCharges === 0,
      detail: `${findings.duplicateCharges} duplicate charges`,
    },
    { name: 'no lost event', held: findings.lostEvents === 0, detail: `${findings.lostEvents} lost events` },
    {
      name: 'balances consistent',
      held: findings.accountsOff === 0 && findings.paymentsMismatched === 0,
      detail: `${findings.accountsOff} accounts off their ledger, ${findings.paymentsMismatched} payments charged ≠ credited`,
    },
    {
      name: 'orders consistent',
      held: findings.ordersInconsistent === 0,
      detail: `${findings.ordersInconsistent} orders whose charge, stock and shipment disagree`,
    },
  ];
}
