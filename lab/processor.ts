/**
 * The simulated card processor both builds call: chaotic on a script (the chaos toolkit of
 * `bulwark/testing`, seeded so a run repeats), and the ground truth of what was really charged.
 */
import { pipeline } from '../src/index.js';
import { chaos } from '../src/testing/index.js';
import type { SeriesRecorder } from './series.js';
import type { Timeline } from './timeline.js';

/** A card number the processor always declines (402). */
export const DECLINED_CARD = '4000000000000002';

/** What a caller asks the processor to charge. */
export interface ChargeRequest {
  /** The caller's reference of the payment or order: what the ground truth is counted by. */
  readonly reference: string;
  readonly cents: number;
  readonly card: string;
  /** When given, the processor charges at most once per key and answers repeats with that charge. */
  readonly idempotencyKey?: string | undefined;
}

/** A charge the processor executed. */
export interface Charge {
  readonly chargeId: string;
  readonly reference: string;
  readonly cents: number;
}

/** What the processor saw, counted by reference. */
export interface ProcessorLedger {
  /** Calls that reached the processor (each attempt of each retry). */
  readonly calls: number;
  /** Charges executed per reference. */
  readonly charges: ReadonlyMap<string, number>;
  /** Refunds executed per reference. */
  readonly refunds: ReadonlyMap<string, number>;
  /** Calls answered with an earlier charge because they repeated its idempotency key. */
  readonly deduplicated: number;
  /** Distinct references the processor was asked to charge. */
  readonly references: number;
  /** Calls still running (a caller that stopped waiting does not stop them). */
  readonly inFlight: number;
}

/** Options of {@link cardProcessor}. */
export interface CardProcessorOptions {
  /** Seeds every chaos strategy: the same seed, the same faults. */
  readonly seed: number;
  readonly timeline: Timeline;
  /** Share of calls that fail with a transient 503. @default 0.3 */
  readonly faultRate?: number;
  /** How long a latency spike holds a call, in ms. @default 1_500 */
  readonly spikeMs?: number;
  /** Where each call is counted per second (the report's chart). */
  readonly series?: SeriesRecorder;
}

/** The simulated processor: `charge` and `refund`, and the ground truth in `ledger()`. */
export interface CardProcessor {
  /** Charges a card. Honours `signal` while it waits (a call aborted in time charges nothing). */
  charge(request: ChargeRequest, signal?: AbortSignal): Promise<Charge>;
  /** Refunds a charge; once per `idempotencyKey`. Reliable: refunds are not part of the chaos. */
  refund(charge: Charge, idempotencyKey: string): Promise<void>;
  ledger(): ProcessorLedger;
}

const status = (code: number, message: string) => Object.assign(new Error(message), { status: code });

/**
 * A processor whose failures follow the script: 30 % transient 503s throughout, latency spikes
 * (a few percent of calls, a third of them in the "latency spikes" phase), every call a 503 during
 * the "outage" phase, and 402 for {@link DECLINED_CARD}. The charge happens after the injected
 * waits, so a caller that gives up in time (and aborts) charges nothing; one that does not abort
 * gets charged later, whatever it did meanwhile.
 *
 * @example
 * const processor = cardProcessor({ seed: 1, timeline });
 * const charge = await processor.charge({ reference: 'p-1', cents: 500, card: '4242' }, signal);
 */
export function cardProcessor(options: CardProcessorOptions): CardProcessor {
  const { seed, timeline, faultRate = 0.3, spikeMs = 1_500, series } = options;
  const charges = new Map<string, number>();
  const refunds = new Map<string, number>();
  const byKey = new Map<string, Charge>();
  const refundKeys = new Set<string>();
  const references = new Set<string>();
  let calls = 0;
  let deduplicated = 0;
  let inFlight = 0;
  let sequence = 0;

  const script = pipeline(
    chaos.fault({
      rate: 1,
      seed,
      enabled: () => timeline.phase() === 'outage',
      error: () => status(503, 'processor: down for maintenance'),
    }),
    chaos.fault({ rate: faultRate, seed: seed + 1, error: () => status(503, 'processor: try again') }),
    chaos.latency({ rate: 0.03, seed: seed + 2, ms: spikeMs }),
    chaos.latency({
      rate: 0.3,
      seed: seed + 3,
      ms: spikeMs,
      enabled: () => timeline.phase() === 'latency spikes',
    }),
    chaos.latency({ rate: 1, seed: seed + 4, ms: 3 }),
  );

  const execute = (request: ChargeRequest): Charge => {
    if (request.card === DECLINED_CARD) throw status(402, 'processor: card declined');
    const earlier = request.idempotencyKey === undefined ? undefined : byKey.get(request.idempotencyKey);
    if (earlier !== undefined) {
      deduplicated++;
      return earlier;
    }
    sequence++;
    const charge = { chargeId: `ch_${sequence}`, reference: request.reference, cents: request.cents };
    charges.set(request.reference, (charges.get(request.reference) ?? 0) + 1);
    if (request.idempotencyKey !== undefined) byKey.set(request.idempotencyKey, charge);
    return charge;
  };

  return {
    charge(request, signal) {
      calls++;
      series?.count('processor calls');
      inFlight++;
      references.add(request.reference);
      return script
        .execute(() => execute(request), signal === undefined ? {} : { signal })
        .finally(() => inFlight--);
    },
    async refund(charge, idempotencyKey) {
      if (refundKeys.has(idempotencyKey)) return;
      refundKeys.add(idempotencyKey);
      refunds.set(charge.reference, (refunds.get(charge.reference) ?? 0) + 1);
    },
    ledger: () => ({ calls, charges, refunds, deduplicated, inFlight, references: references.size }),
  };
}
