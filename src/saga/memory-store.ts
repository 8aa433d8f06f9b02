/**
 * The in-memory saga log: the reference behaviour every other log's conformance suite is held to.
 * One process only, and it dies with the process: with it a saga checks run ids and keeps its
 * lease like a durable one, and `recover()` finishes the runs of this process whose runner
 * stopped (a lost lease, a log failure); for crash recovery use `postgresStores(db).sagaLog`.
 */
import type { Clock } from '../core/clock.js';
import { clockField, readOptions, type Schema } from '../core/read-options.js';
import { textValue } from '../core/validate.js';
import { leaseMs } from '../lock/memory-store.js';
import { checkChange, checkLease, jsonText } from './log-values.js';
import {
  type ClaimedRun,
  type LoggedStep,
  SAGA_RETENTION_MS,
  type SagaChange,
  type SagaLease,
  type SagaLog,
  type SagaStatus,
  type StepState,
} from './store.js';

/** Options of {@link memorySagaLog}. */
export interface MemorySagaLogOptions {
  /** The clock leases end on (the log's clock is authoritative). @default systemClock */
  readonly clock?: Clock | undefined;
}

const schema = { clock: clockField } satisfies Schema<MemorySagaLogOptions>;

/** The statuses that finish a run. */
const finals = new Set<SagaStatus>(['completed', 'compensated', 'attention']);

interface Run {
  readonly name: string;
  readonly id: string;
  readonly input: string;
  status: SagaStatus;
  owner: string | undefined;
  expiresAt: number;
  /** By step name, in the order first written. */
  readonly steps: Map<string, { position: number; state: StepState; output: string | undefined }>;
}

/** The map key of a run: names and ids hold no U+0000. */
const runKey = (name: string, id: string): string => `${name}\u0000${id}`;

/**
 * The in-memory saga log, from {@link memorySagaLog}. Leases end on its `clock`. Completed and
 * compensated runs are dropped once finished for {@link SAGA_RETENTION_MS} (checked as runs
 * start); runs that need attention are kept.
 */
export class MemorySagaLog implements SagaLog {
  readonly timeoutMs = 0;
  private readonly runs = new Map<string, Run>();
  /** Completed and compensated runs, in the order they finished, with when. */
  private readonly finished: { key: string; at: number }[] = [];

  constructor(private readonly clock: Clock) {}

  start(lease: SagaLease, input: string): Promise<boolean> {
    try {
      checkLease(lease);
      jsonText('input', input);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = this.clock.now();
    this.forgetFinished(now);
    const key = runKey(lease.name, lease.id);
    if (this.runs.has(key)) return Promise.resolve(false);
    this.runs.set(key, {
      name: lease.name,
      id: lease.id,
      input,
      status: 'running',
      owner: lease.owner,
      expiresAt: now + lease.leaseMs,
      steps: new Map(),
    });
    return Promise.resolve(true);
  }

  write(lease: SagaLease, change: SagaChange): Promise<boolean> {
    try {
      checkLease(lease);
      checkChange(change);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.held(lease);
    if (run === undefined) return Promise.resolve(false);
    const now = this.clock.now();
    run.expiresAt = now + lease.leaseMs;
    if ('status' in change) {
      run.status = change.status;
      if (finals.has(change.status)) {
        run.owner = undefined;
        if (change.status !== 'attention') this.finished.push({ key: runKey(run.name, run.id), at: now });
      }
    } else {
      const step = run.steps.get(change.step);
      if (step === undefined) {
        run.steps.set(change.step, { position: change.position, state: change.state, output: change.output });
      } else {
        step.position = change.position;
        step.state = change.state;
        if (change.output !== undefined) step.output = change.output;
      }
    }
    return Promise.resolve(true);
  }

  renew(lease: SagaLease): Promise<boolean> {
    try {
      checkLease(lease);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.held(lease);
    if (run === undefined) return Promise.resolve(false);
    run.expiresAt = this.clock.now() + lease.leaseMs;
    return Promise.resolve(true);
  }

  claim(name: string, owner: string, ms: number): Promise<ClaimedRun | undefined> {
    try {
      textValue('name', name);
      textValue('owner', owner);
      leaseMs('leaseMs', ms);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = this.clock.now();
    let oldest: Run | undefined;
    for (const run of this.runs.values()) {
      if (run.name !== name || finals.has(run.status) || run.expiresAt > now) continue;
      if (oldest === undefined || run.expiresAt < oldest.expiresAt) oldest = run;
    }
    if (oldest === undefined) return Promise.resolve(undefined);
    oldest.owner = owner;
    oldest.expiresAt = now + ms;
    const steps: LoggedStep[] = [];
    for (const [step, s] of oldest.steps)
      steps.push({ step, position: s.position, state: s.state, output: s.output });
    steps.sort((a, b) => a.position - b.position);
    return Promise.resolve({
      id: oldest.id,
      input: oldest.input,
      status: oldest.status as ClaimedRun['status'],
      steps,
    });
  }

  /** The unfinished run `lease.owner` holds, if any. */
  private held(lease: SagaLease): Run | undefined {
    const run = this.runs.get(runKey(lease.name, lease.id));
    return run !== undefined && run.owner === lease.owner ? run : undefined;
  }

  /** Drops the completed and compensated runs finished for longer than the retention. */
  private forgetFinished(now: number): void {
    let n = 0;
    while (n < this.finished.length && this.finished[n]!.at + SAGA_RETENTION_MS <= now) {
      this.runs.delete(this.finished[n]!.key);
      n++;
    }
    this.finished.splice(0, n);
  }
}

/**
 * The in-memory saga log: for one process and for tests (with a `FakeClock`). Throws a
 * `TypeError` for a bad or unknown option.
 *
 * @example
 * const clock = new FakeClock();
 * const order = saga<Order>({ name: 'order', log: memorySagaLog({ clock }), clock });
 */
export function memorySagaLog(options?: MemorySagaLogOptions): MemorySagaLog {
  return new MemorySagaLog(readOptions('memorySagaLog options', options, schema).clock);
}
