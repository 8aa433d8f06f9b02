/**
 * One run of a saga, going forward: each step in order, recorded before and after it runs when
 * the saga has a log; on a failure (a mandatory step's, the caller's abort, the log's, a lost
 * lease) the completed steps are compensated, newest first, and the run rejects with
 * `SagaFailedError`.
 */
import type { Clock } from '../core/clock.js';
import { toJson } from '../core/json.js';
import type { Compensator, SagaEvents, Undo } from './compensation.js';
import { SagaFailedError } from './errors.js';
import type { Journal, Progress } from './journal.js';
import type { ReadStep, StepContext } from './options.js';
import type { SagaLog } from './store.js';

/** What every saga derived from one `saga()` call shares. */
export interface SagaShared {
  readonly name: string;
  readonly compensator: Compensator;
  readonly events: SagaEvents;
  readonly clock: Clock;
  readonly log: SagaLog | undefined;
  readonly leaseMs: number;
  /** A random prefix and a counter: owner ids unique across processes. */
  readonly ownerPrefix: string;
  owners: number;
}

/** A fresh owner id for a run or a recovery. */
export function nextOwner(shared: SagaShared): string {
  // Stryker disable next-line AssignmentOperator: (-=) counting down gives unique ids as well
  shared.owners += 1;
  return `${shared.ownerPrefix}${shared.owners}`;
}

/** A failure that stops the run, with what it was. */
interface Failure {
  readonly error: unknown;
}

/** What a saga run resolves: every step's output, and the optional steps that failed. */
export interface SagaResult<Outputs> {
  readonly outputs: Outputs;
  readonly skipped: readonly { readonly step: string; readonly error: unknown }[];
}

/** One run; {@link execute} once. */
export class SagaRun<Input> {
  private readonly outputs: Record<string, unknown> = {};
  private readonly skipped: { step: string; error: unknown }[] = [];
  /** The steps that completed, in order, with their outputs. */
  private readonly completed: Undo[] = [];

  constructor(
    private readonly shared: SagaShared,
    private readonly definitions: readonly ReadStep[],
    private readonly input: Input,
    private readonly id: string,
    private readonly progress: Progress,
    private readonly journal: Journal | undefined,
  ) {}

  async execute(): Promise<SagaResult<unknown>> {
    const { journal } = this;
    for (const [position, step] of this.definitions.entries()) {
      const failure = await this.forward(step, position);
      if (failure !== undefined) {
        await journal?.note({ status: 'compensating' });
        const undo = this.completed.reverse();
        const { compensated, errors } = await this.shared.compensator.compensate(
          undo,
          this.input,
          this.id,
          journal,
          false,
        );
        // A compensation that failed leaves the run compensating: its lease lapses, and
        // recover() tries again.
        if (errors.length === 0) await journal?.note({ status: 'compensated' });
        journal?.stop();
        throw new SagaFailedError(this.id, step.name, failure.error, compensated, errors);
      }
    }
    await journal?.note({ status: 'completed' });
    journal?.stop();
    return { outputs: this.outputs, skipped: this.skipped };
  }

  /** Runs one step; resolves the failure that stops the run, if any. */
  private async forward(step: ReadStep, position: number): Promise<Failure | undefined> {
    const { progress, journal } = this;
    try {
      if (progress.aborted) throw progress.reason;
      await journal?.record({ step: step.name, position, state: 'running' });
    } catch (error) {
      return { error };
    }
    let output: unknown;
    try {
      output = await this.runStep(step);
    } catch (error) {
      return this.failed(step, position, error);
    }
    this.completed.push({ step, position, output });
    this.outputs[step.name] = output;
    // It completed, but cannot be recorded or the caller left meanwhile: the saga stops here, this
    // step undone too (its effect exists).
    try {
      if (journal !== undefined) {
        const json = toJson(`the output of step "${step.name}"`, output);
        await journal.record({ step: step.name, position, state: 'done', output: json });
      }
    } catch (error) {
      return { error };
    }
    return progress.aborted ? { error: progress.reason } : undefined;
  }

  private runStep(step: ReadStep): Promise<unknown> {
    const { progress } = this;
    const context: StepContext<Input, unknown> = {
      input: this.input,
      outputs: this.outputs,
      sagaId: this.id,
      get signal() {
        return progress.signal;
      },
    };
    const run = step.run as (context: StepContext<Input, unknown>) => unknown;
    if (step.retry === undefined) return Promise.resolve().then(() => run(context));
    return step.retry.execute(({ signal }) => run({ ...context, signal }), { signal: context.signal });
  }

  /**
   * A step failed: reports and records it. Resolves the run's failure, or undefined when the step
   * was optional (and the caller still there): the run goes on.
   */
  private async failed(step: ReadStep, position: number, error: unknown): Promise<Failure | undefined> {
    const optional = step.optional && !this.progress.aborted;
    const { stepFailures } = this.shared.events;
    // Stryker disable next-line ConditionalExpression: (true) emitting with no listener does nothing; the check only skips building the event
    if (stepFailures.active)
      stepFailures.emit({ policy: this.shared.name, sagaId: this.id, step: step.name, error, optional });
    if (!optional) {
      await this.journal?.note({ step: step.name, position, state: 'failed' });
      return { error };
    }
    try {
      await this.journal?.record({ step: step.name, position, state: 'skipped' });
    } catch (recordError) {
      return { error: recordError };
    }
    this.skipped.push({ step: step.name, error });
    return undefined;
  }
}
