/** The options, steps and events of `saga()`: types, defaults and validation. */
import type { Clock } from '../core/clock.js';
import type { Listener } from '../core/events.js';
import type { Policy } from '../core/policy.js';
import {
  boolean,
  clockField,
  func,
  listenerField,
  nonEmptyString,
  optional,
  policy,
  positiveInt,
  readOptions,
  required,
  type Schema,
  signal,
  storeOf,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import type { SagaLog } from './store.js';

/** What a step's `run` gets. */
export interface StepContext<Input, Outputs> {
  /** The saga's input. */
  readonly input: Input;
  /** The outputs of the steps before this one (a failed optional step has none). */
  readonly outputs: Outputs;
  /** Aborted when the caller's signal aborts (then the saga compensates). */
  readonly signal: AbortSignal;
  /** This run's id. */
  readonly sagaId: string;
}

/** What a step's `compensate` gets. */
export interface CompensationContext<Input, Output> {
  readonly input: Input;
  /** What this step's `run` returned. */
  readonly output: Output;
  /** The compensation's own signal: the caller's abort does not reach it; its policy's timeout does. */
  readonly signal: AbortSignal;
  /**
   * `<sagaId>:<step>`: the same for every attempt at this compensation (retries, and after a crash,
   * `recover()`): pass it to the downstream call so that undoing twice undoes once.
   */
  readonly idempotencyKey: string;
  readonly sagaId: string;
}

/** One step of a saga. */
export interface StepDefinition<Input, Outputs, Name extends string, Output> {
  /** Unique within the saga; names the step in outputs, errors and events. */
  readonly name: Name;
  /** Does the step's work; its value is the step's output. */
  run(context: StepContext<Input, Outputs>): Output | PromiseLike<Output>;
  /** Undoes the step's work (after a later mandatory step failed). Without it, nothing is undone. */
  compensate?(context: CompensationContext<Input, Output>): unknown;
  /** A failure of this step is recorded in `skipped` and the saga goes on. @default false */
  readonly optional?: boolean | undefined;
  /** A policy around `run` (e.g. `retry()`, `timeout()`); its refusal is the step's failure. */
  readonly retry?: Policy<unknown> | undefined;
}

/** A step failed, and the saga will compensate (or, for an optional step, go on). */
export interface StepFailedEvent {
  readonly policy: string;
  readonly sagaId: string;
  readonly step: string;
  readonly error: unknown;
  /** Whether the step was optional (the saga goes on). */
  readonly optional: boolean;
}

/** A step was compensated. */
export interface CompensatedEvent {
  readonly policy: string;
  readonly sagaId: string;
  readonly step: string;
}

/** A compensation failed for good (after its policy). */
export interface CompensationFailedEvent {
  readonly policy: string;
  readonly sagaId: string;
  readonly step: string;
  readonly error: unknown;
}

/** Options of `saga()`. */
export interface SagaOptions {
  /** Names the saga in events. @default 'saga' */
  readonly name?: string | undefined;
  /**
   * The policy every compensation runs under, with a fresh signal of its own. @default
   * `pipeline(retryAll({ maxAttempts: 3, backoff: exponentialJitter({ baseMs: 100, maxMs: 2_000 }) }), timeout(30_000, { mode: 'aggressive' }))`
   */
  readonly compensation?: Policy<unknown> | undefined;
  /** The clock of the default compensation policy and of the lease on the log. @default systemClock */
  readonly clock?: Clock | undefined;
  /**
   * Where each run is recorded, before and after each step, so that `recover()` can finish what a
   * crash left mid-flight: `postgresStores(db).sagaLog`, or `memorySagaLog()` (one process). With a
   * log, inputs and outputs must be JSON-serialisable and run ids are unique. @default none: the
   * run is kept in memory only
   */
  readonly log?: SagaLog | undefined;
  /**
   * With a `log`: the lease on a run, in ms, renewed every `leaseMs / 3` while it runs: how long
   * after a crash `recover()` may take the run over. At least 300 ms and 3 × the log's deadline (a
   * `TypeError` otherwise). @default 30_000
   */
  readonly leaseMs?: number | undefined;
  /** Subscribes to failed steps, as `.onStepFailed(listener)`. */
  readonly onStepFailed?: Listener<StepFailedEvent> | undefined;
  /** Subscribes to compensated steps, as `.onCompensated(listener)`. */
  readonly onCompensated?: Listener<CompensatedEvent> | undefined;
  /** Subscribes to failed compensations, as `.onCompensationFailed(listener)`. */
  readonly onCompensationFailed?: Listener<CompensationFailedEvent> | undefined;
}

/** Options of one `run`. */
export interface SagaRunOptions {
  /** Aborting it fails the current step: the saga compensates. */
  readonly signal?: AbortSignal | undefined;
  /** This run's id (in contexts, events, errors and idempotency keys). @default a random UUID */
  readonly id?: string | undefined;
}

/** The shortest `leaseMs` whatever the log. */
export const MIN_LEASE_MS = 300;

const schema = {
  name: withDefault('saga', nonEmptyString),
  compensation: optional(policy),
  clock: clockField,
  log: optional(storeOf<SagaLog>('a saga log', ['start', 'write', 'renew', 'claim'], true)),
  leaseMs: withDefault(30_000, positiveInt),
  onStepFailed: listenerField<StepFailedEvent>(),
  onCompensated: listenerField<CompensatedEvent>(),
  onCompensationFailed: listenerField<CompensationFailedEvent>(),
} satisfies Schema<SagaOptions>;

/** Reads and checks `options`; a `TypeError` names a bad or unknown option. */
export function readSagaOptions(options: SagaOptions | undefined) {
  const o = readOptions('saga options', options, schema);
  const min = Math.max(MIN_LEASE_MS, 3 * (o.log?.timeoutMs ?? 0));
  if (o.leaseMs < min || !Number.isSafeInteger(o.leaseMs)) {
    throw new TypeError(
      `expected "leaseMs" to be at least ${min} (300 ms and 3 × the log's deadline, so a renewal can be confirmed in time), got ${show(o.leaseMs)}`,
    );
  }
  return o;
}

const stepSchema = {
  name: required(nonEmptyString),
  run: required(func<(context: never) => unknown>()),
  compensate: optional(func<(context: never) => unknown>()),
  optional: withDefault(false, boolean),
  retry: optional(policy),
} satisfies Schema<StepDefinition<unknown, unknown, string, unknown>>;

/** A step as read and checked. */
export type ReadStep = ReturnType<typeof readStep>;

/** Reads and checks one step; a `TypeError` names a bad, missing or unknown field. */
export function readStep(step: StepDefinition<never, never, string, unknown>) {
  return readOptions('step', step, stepSchema);
}

const runSchema = { signal: optional(signal), id: optional(nonEmptyString) } satisfies Schema<SagaRunOptions>;

/** Options of `recover()`. */
export interface RecoverOptions {
  /** Aborting it stops claiming more runs; the run being recovered is finished first. */
  readonly signal?: AbortSignal | undefined;
}

const recoverSchema = { signal: optional(signal) } satisfies Schema<RecoverOptions>;

/** `recover()`'s options; a `TypeError` for a bad or unknown option. */
export function readRecoverOptions(options: RecoverOptions | undefined) {
  return readOptions('recover options', options, recoverSchema);
}

/** One run's options; a `TypeError` for a bad or unknown option. */
export function readRunOptions(options: SagaRunOptions | undefined) {
  return readOptions('run options', options, runSchema);
}
