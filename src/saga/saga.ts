/**
 * `saga()`: a sequence of steps across services, each with a compensating action; when a mandatory
 * step fails, the completed steps are undone in reverse order (LIFO), each compensation under a
 * policy and a signal of its own, none skipped because another failed.
 */
import { randomUUID } from 'node:crypto';
import type { Disposer, Listener } from '../core/events.js';
import { toJson } from '../core/json.js';
import { Compensator, defaultCompensation, SagaEvents } from './compensation.js';
import { DuplicateSagaError } from './errors.js';
import { CallerProgress, Journal } from './journal.js';
import {
  type CompensatedEvent,
  type CompensationFailedEvent,
  type ReadStep,
  type RecoverOptions,
  readRecoverOptions,
  readRunOptions,
  readSagaOptions,
  readStep,
  type SagaOptions,
  type SagaRunOptions,
  type StepDefinition,
  type StepFailedEvent,
} from './options.js';
import { type RecoverResult, recoverRuns } from './recover.js';
import { nextOwner, type SagaResult, SagaRun, type SagaShared } from './run.js';

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
  /**
   * With a `log`: finds the runs of this saga that stopped mid-flight (their process crashed, or
   * lost its lease) and whose lease has ended, claims each (so two processes recovering at once
   * never both take one run), and finishes it: a run whose every step had completed is recorded
   * completed; any other has its completed steps compensated, newest first (a step already
   * compensated is skipped). Resolves `{ recovered, completed, compensated, needsAttention }`.
   * Rejects with a `TypeError` without a log, and with the log's error when it fails.
   */
  recover(options?: RecoverOptions): Promise<RecoverResult>;
  /** Subscribes to failed steps; returns the disposer. */
  onStepFailed(listener: Listener<StepFailedEvent>): Disposer;
  /** Subscribes to compensated steps; returns the disposer. */
  onCompensated(listener: Listener<CompensatedEvent>): Disposer;
  /** Subscribes to compensations that failed for good; returns the disposer. */
  onCompensationFailed(listener: Listener<CompensationFailedEvent>): Disposer;
}

class SagaImpl<Input, Outputs> implements Saga<Input, Outputs> {
  readonly name: string;
  readonly steps: readonly string[];

  constructor(
    private readonly shared: SagaShared,
    private readonly definitions: readonly ReadStep[],
  ) {
    this.name = shared.name;
    this.steps = definitions.map((d) => d.name);
  }

  step<Name extends string, Output>(
    definition: StepDefinition<Input, Outputs, Name, Output>,
  ): Saga<Input, Outputs & { readonly [K in Name]: Output }> {
    const read = readStep(definition as StepDefinition<never, never, string, unknown>);
    if (this.steps.includes(read.name))
      throw new TypeError(`expected step names to be unique, got "${read.name}" twice`);
    // The outputs' type grows with each step; the runtime object is the same kind of saga.
    return new SagaImpl<Input, Outputs & { readonly [K in Name]: Output }>(this.shared, [
      ...this.definitions,
      read,
    ]);
  }

  async run(input: Input, options?: SagaRunOptions): Promise<SagaResult<Outputs>> {
    const { signal, id = randomUUID() } = readRunOptions(options);
    const journal = await this.begin(input, id, signal);
    const progress = journal ?? new CallerProgress(signal);
    const run = new SagaRun(this.shared, this.definitions, input, id, progress, journal);
    return (await run.execute()) as SagaResult<Outputs>;
  }

  async recover(options?: RecoverOptions): Promise<RecoverResult> {
    const { signal } = readRecoverOptions(options);
    const { log } = this.shared;
    if (log === undefined) throw new TypeError('recover() needs a saga with a log');
    return await recoverRuns({
      ...this.shared,
      log,
      definitions: this.definitions,
      signal,
      owner: () => nextOwner(this.shared),
    });
  }

  onStepFailed(listener: Listener<StepFailedEvent>): Disposer {
    return this.shared.events.stepFailures.add(listener);
  }

  onCompensated(listener: Listener<CompensatedEvent>): Disposer {
    return this.shared.events.compensations.add(listener);
  }

  onCompensationFailed(listener: Listener<CompensationFailedEvent>): Disposer {
    return this.shared.events.compensationFailures.add(listener);
  }

  /**
   * With a log: records the run (its input checked first) and keeps its lease; rejects with a
   * `TypeError` for an input JSON would change, `DuplicateSagaError` for an id in use.
   */
  private async begin(input: Input, id: string, signal: AbortSignal | undefined) {
    const { log, leaseMs, clock } = this.shared;
    if (log === undefined) return undefined;
    const json = toJson('the input', input) ?? 'null';
    const lease = { name: this.name, id, owner: nextOwner(this.shared), leaseMs };
    const sentAt = clock.now();
    if (!(await log.start(lease, json))) throw new DuplicateSagaError(id);
    return new Journal(log, lease, clock, sentAt, signal);
  }
}

/**
 * A saga with no steps yet: add them with `.step({ name, run, compensate?, optional?, retry? })`,
 * then `.run(input, { signal, id })`. Compensations run under `options.compensation` (by default
 * three tries with backoff, 30 s each), each with a fresh signal the caller's abort does not
 * reach, and an `idempotencyKey` (`<sagaId>:<step>`) to pass downstream. Throws a `TypeError` for
 * a bad or unknown option.
 *
 * Without a `log`, a run keeps its progress in memory: a crash mid-run leaves its compensation
 * undone. With one (`postgresStores(db).sagaLog`), each run is recorded before and after each
 * step, and `recover()`, in any process, finishes what a crash left: compensation is then
 * at-least-once, hence the idempotency keys.
 *
 * @example
 * const order = saga<{ orderId: string; amount: number }>({ name: 'order', log: stores.sagaLog })
 *   .step({ name: 'payment', run: ({ input }) => payments.charge(input), compensate: ({ output, idempotencyKey }) => payments.refund(output.id, { idempotencyKey }) })
 *   .step({ name: 'shipment', run: ({ input, outputs }) => shipping.book(input.orderId, outputs.payment.id) });
 * const { outputs } = await order.run({ orderId: 'o-1', amount: 42 }, { signal: request.signal, id: 'o-1' });
 * // at start-up, and then every minute or so, in every process:
 * await order.recover();
 */
export function saga<Input>(options?: SagaOptions): Saga<Input> {
  const o = readSagaOptions(options);
  const events = new SagaEvents();
  if (o.onStepFailed) events.stepFailures.add(o.onStepFailed);
  if (o.onCompensated) events.compensations.add(o.onCompensated);
  if (o.onCompensationFailed) events.compensationFailures.add(o.onCompensationFailed);
  const compensation = o.compensation ?? defaultCompensation(o.clock);
  return new SagaImpl<Input, Record<never, never>>(
    {
      name: o.name,
      compensator: new Compensator(o.name, compensation, events),
      events,
      clock: o.clock,
      log: o.log,
      leaseMs: o.leaseMs,
      // Stryker disable next-line StringLiteral: (``) an empty prefix leaves ids unique within the process, which is all a test can see
      ownerPrefix: `${randomUUID()}:`,
      owners: 0,
    },
    [],
  );
}
