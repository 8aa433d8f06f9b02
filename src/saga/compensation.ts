/**
 * Undoing a saga's completed steps, newest first, each under the compensation policy with a signal
 * of its own: shared by a run that failed and by `recover()`. Every compensation is tried, whatever
 * the others do; with a log, each is recorded before (`compensating`) and after (`compensated`).
 */
import type { Clock } from '../core/clock.js';
import { Listeners } from '../core/events.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { countEvent } from '../core/telemetry.js';
import { exponentialJitter } from '../retry/backoff.js';
import { retryAll } from '../retry/retry.js';
import { timeout } from '../timeout/timeout.js';
import type { CompensationFailure } from './errors.js';
import type { Journal } from './journal.js';
import type { CompensatedEvent, CompensationFailedEvent, ReadStep, StepFailedEvent } from './options.js';

/** The events of one saga, shared by the sagas `step` derives from it. */
export class SagaEvents {
  readonly stepFailures = new Listeners<StepFailedEvent>();
  readonly compensations = new Listeners<CompensatedEvent>();
  readonly compensationFailures = new Listeners<CompensationFailedEvent>();
}

/** The default compensation policy: three tries with jittered backoff, 30 s each (aggressive: a compensation that ignores its signal still ends). */
export function defaultCompensation(clock: Clock): Policy<unknown> {
  return pipeline(
    // Stryker disable next-line ObjectLiteral: ({}) the default base is 100 ms too, and three tries never reach either ceiling
    retryAll({ maxAttempts: 3, backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }), clock }),
    timeout(30_000, { clock, mode: 'aggressive' }),
  );
}

/** A step to undo: its definition, where it ran, and its output. */
export interface Undo {
  readonly step: ReadStep;
  readonly position: number;
  readonly output: unknown;
}

/** What a compensation pass did. */
export interface Compensated {
  /** The steps compensated, in the order they were. */
  readonly compensated: string[];
  /** The compensations that failed for good. */
  readonly errors: CompensationFailure[];
}

/** Runs a saga's compensations. */
export class Compensator {
  constructor(
    private readonly name: string,
    private readonly policy: Policy<unknown>,
    private readonly events: SagaEvents,
  ) {}

  /**
   * Undoes `undo` in the order given (the caller reverses), for run `sagaId` of `input`. With a
   * `journal` each step is recorded as it goes, and `stopOnLoss` stops before the next step once
   * the lease is lost (recovery: the new owner undoes the rest; the caller reads `journal.lost`).
   */
  async compensate(
    undo: readonly Undo[],
    input: unknown,
    sagaId: string,
    journal: Journal | undefined,
    stopOnLoss: boolean,
  ): Promise<Compensated> {
    const compensated: string[] = [];
    const errors: CompensationFailure[] = [];
    for (const { step, position, output } of undo) {
      const run = step.compensate as ((context: unknown) => unknown) | undefined;
      if (run === undefined) continue;
      // Stryker disable next-line OptionalChaining: (journal.lost) only recover() stops on loss, and it always passes a journal
      if (stopOnLoss && journal?.lost) break;
      const idempotencyKey = `${sagaId}:${step.name}`;
      await journal?.note({ step: step.name, position, state: 'compensating' });
      try {
        await this.policy.execute(({ signal }) => run({ input, output, signal, idempotencyKey, sagaId }));
        compensated.push(step.name);
        countEvent('compensated', 'saga', this.name);
        await journal?.note({ step: step.name, position, state: 'compensated' });
        // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
        if (this.events.compensations.active)
          this.events.compensations.emit({ policy: this.name, sagaId, step: step.name });
      } catch (error) {
        errors.push({ step: step.name, error });
        // Stryker disable next-line ConditionalExpression: (true) as above
        if (this.events.compensationFailures.active)
          this.events.compensationFailures.emit({ policy: this.name, sagaId, step: step.name, error });
      }
    }
    return { compensated, errors };
  }
}
