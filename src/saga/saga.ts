/**
 * `saga()`: a sequence of steps across services, each with a compensating action; when a mandatory
 * step fails, the completed steps are undone in reverse order (LIFO), each compensation under a
 * policy and a signal of its own, none skipped because another failed.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { type Disposer, type Listener, Listeners } from '../core/events.js';
import { LazySignal } from '../core/lazy-signal.js';
import { pipeline } from '../core/pipeline.js';
import type { Policy } from '../core/policy.js';
import { exponentialJitter } from '../retry/backoff.js';
import { retryAll } from '../retry/retry.js';
import { timeout } from '../timeout/timeout.js';
import { type CompensationFailure, SagaFailedError } from './errors.js';
import {
  type CompensatedEvent,
  type CompensationFailedEvent,
  type ReadStep,
  readRunOptions,
  readSagaOptions,
  readStep,
  type SagaOptions,
  type SagaRunOptions,
  type StepContext,
  type StepDefinition,
  type StepFailedEvent,
} from './options.js';

/** What a saga run resolves: every step's output, and the optional steps that failed. */
export interface SagaResult<Outputs> {
  readonly outputs: Outputs;
  readonly skipped: readonly { readonly step: string; readonly error: unknown }[];
}

/** A saga, from {@link saga}: add steps with `step`, then `run`. */
export interface Saga<Input, Outputs = Record<never, never>> {
  /** The `name` option. */
  readonly name: string;
  /** The names of the steps, in order. */
  readonly steps: readonly string[];
  /**
   * A new saga with `definition` added as the last step (this one is left as it is). Throws a
   * `TypeError` for a bad step or a name already taken.
   */
  step<Name extends string, Output>(
    definition: StepDefinition<Input, Outputs, Name, Output> & { readonly optional: true },
  ): Saga<Input, Outputs & { readonly [K in Name]?: Output }>;
  step<Name extends string, Output>(
    definition: StepDefinition<Input, Outputs, Name, Output>,
  ): Saga<Input, Outputs & { readonly [K in Name]: Output }>;
  /**
   * Runs the steps in order, each seeing the input and the earlier outputs. Resolves `{ outputs,
   * skipped }`. When a mandatory step fails, or the caller's signal aborts (before a step, or while
   * one runs: a step that completes after the abort is compensated too), every completed step is
   * compensated in reverse order and the run rejects with `SagaFailedError`. Rejects with a
   * `TypeError` for bad options, before any step runs.
   */
  run(input: Input, options?: SagaRunOptions): Promise<SagaResult<Outputs>>;
  /** Subscribes to failed steps; returns the disposer. */
  onStepFailed(listener: Listener<StepFailedEvent>): Disposer;
  /** Subscribes to compensated steps; returns the disposer. */
  onCompensated(listener: Listener<CompensatedEvent>): Disposer;
  /** Subscribes to compensations that failed for good; returns the disposer. */
  onCompensationFailed(listener: Listener<CompensationFailedEvent>): Disposer;
}

/** A step that completed, with its output: what a compensation gets. */
interface Completed {
  readonly step: ReadStep;
  readonly output: unknown;
}

/** The events of one saga, shared by the sagas `step` derives from it. */
class SagaEvents {
  readonly stepFailures = new Listeners<StepFailedEvent>();
  readonly compensations = new Listeners<CompensatedEvent>();
  readonly compensationFailures = new Listeners<CompensationFailedEvent>();
}

/** The default compensation policy: three tries with jittered backoff, 30 s each (aggressive: a compensation that ignores its signal still ends). */
function defaultCompensation(clock: Clock): Policy<unknown> {
  return pipeline(
    retryAll({ maxAttempts: 3, backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }), clock }),
    timeout(30_000, { clock, mode: 'aggressive' }),
  );
}

class SagaImpl<Input, Outputs> implements Saga<Input, Outputs> {
  readonly steps: readonly string[];

  constructor(
    readonly name: string,
    private readonly definitions: readonly ReadStep[],
    private readonly compensation: Policy<unknown>,
    private readonly events: SagaEvents,
  ) {
    this.steps = definitions.map((d) => d.name);
  }

  step<Name extends string, Output>(
    definition: StepDefinition<Input, Outputs, Name, Output>,
  ): Saga<Input, Outputs & { readonly [K in Name]: Output }> {
    const read = readStep(definition as StepDefinition<never, never, string, unknown>);
    if (this.steps.includes(read.name))
      throw new TypeError(`expected step names to be unique, got "${read.name}" twice`);
    // The outputs' type grows with each step; the runtime object is the same kind of saga.
    return new SagaImpl<Input, Outputs & { readonly [K in Name]: Output }>(
      this.name,
      [...this.definitions, read],
      this.compensation,
      this.events,
    );
  }

  async run(input: Input, options?: SagaRunOptions): Promise<SagaResult<Outputs>> {
    const { signal, id = randomUUID() } = readRunOptions(options);
    // Without a caller's signal, steps get one that never aborts (made only if a step reads it).
    // Stryker disable next-line ConditionalExpression: (true) with a caller's signal the quiet one is never read
    const quiet = signal === undefined ? new LazySignal() : undefined;
    const outputs: Record<string, unknown> = {};
    const skipped: { step: string; error: unknown }[] = [];
    const completed: Completed[] = [];
    for (const step of this.definitions) {
      let failure: { error: unknown } | undefined;
      if (signal?.aborted) failure = { error: signal.reason };
      else {
        const context: StepContext<Input, unknown> = {
          input,
          outputs,
          sagaId: id,
          get signal() {
            return signal ?? (quiet as LazySignal).signal;
          },
        };
        try {
          const output = await this.runStep(step, context);
          completed.push({ step, output });
          outputs[step.name] = output;
          // It completed, but the caller left meanwhile: the saga stops here, this step undone too.
          if (signal?.aborted) failure = { error: signal.reason };
        } catch (error) {
          const optional = step.optional && !signal?.aborted;
          this.stepFailed(id, step.name, error, optional);
          if (optional) skipped.push({ step: step.name, error });
          else failure = { error };
        }
      }
      if (failure !== undefined) {
        const { compensated, errors } = await this.compensate(completed, input, id);
        throw new SagaFailedError(id, step.name, failure.error, compensated, errors);
      }
    }
    return { outputs: outputs as Outputs, skipped };
  }

  onStepFailed(listener: Listener<StepFailedEvent>): Disposer {
    return this.events.stepFailures.add(listener);
  }

  onCompensated(listener: Listener<CompensatedEvent>): Disposer {
    return this.events.compensations.add(listener);
  }

  onCompensationFailed(listener: Listener<CompensationFailedEvent>): Disposer {
    return this.events.compensationFailures.add(listener);
  }

  private runStep(step: ReadStep, context: StepContext<Input, unknown>): Promise<unknown> {
    const run = step.run as (context: StepContext<Input, unknown>) => unknown;
    if (step.retry === undefined) return Promise.resolve().then(() => run(context));
    return step.retry.execute(({ signal }) => run({ ...context, signal }), { signal: context.signal });
  }

  /** Undoes `completed` in reverse order; every compensation is tried, whatever the others do. */
  private async compensate(completed: readonly Completed[], input: Input, sagaId: string) {
    const compensated: string[] = [];
    const errors: CompensationFailure[] = [];
    for (let i = completed.length - 1; i >= 0; i--) {
      const { step, output } = completed[i]!;
      const undo = step.compensate as ((context: unknown) => unknown) | undefined;
      if (undo === undefined) continue;
      const idempotencyKey = `${sagaId}:${step.name}`;
      try {
        await this.compensation.execute(({ signal }) =>
          undo({ input, output, signal, idempotencyKey, sagaId }),
        );
        compensated.push(step.name);
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

  private stepFailed(sagaId: string, step: string, error: unknown, optional: boolean): void {
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (this.events.stepFailures.active)
      this.events.stepFailures.emit({ policy: this.name, sagaId, step, error, optional });
  }
}

/**
 * A saga with no steps yet: add them with `.step({ name, run, compensate?, optional?, retry? })`,
 * then `.run(input, { signal, id })`. Compensations run under `options.compensation` (by default
 * three tries with backoff, 30 s each), each with a fresh signal the caller's abort does not
 * reach, and an `idempotencyKey` (`<sagaId>:<step>`) to pass downstream. Throws a `TypeError` for
 * a bad or unknown option.
 *
 * This saga keeps its progress in memory: a crash mid-run leaves its compensation undone (the
 * durable log and `recover()` are not built yet; see docs/saga.md).
 *
 * @example
 * const order = saga<{ orderId: string; amount: number }>({ name: 'order' })
 *   .step({ name: 'payment', run: ({ input }) => payments.charge(input), compensate: ({ output, idempotencyKey }) => payments.refund(output.id, { idempotencyKey }) })
 *   .step({ name: 'shipment', run: ({ input, outputs }) => shipping.book(input.orderId, outputs.payment.id) });
 * const { outputs } = await order.run({ orderId: 'o-1', amount: 42 }, { signal: request.signal });
 */
export function saga<Input>(options?: SagaOptions): Saga<Input> {
  const o = readSagaOptions(options);
  const events = new SagaEvents();
  if (o.onStepFailed) events.stepFailures.add(o.onStepFailed);
  if (o.onCompensated) events.compensations.add(o.onCompensated);
  if (o.onCompensationFailed) events.compensationFailures.add(o.onCompensationFailed);
  return new SagaImpl<Input, Record<never, never>>(
    o.name,
    [],
    o.compensation ?? defaultCompensation(o.clock),
    events,
  );
}
