/**
 * `recover()`: finishing the runs a crash (or a lost lease) left mid-flight. Each run is claimed
 * from the log (one claimant per run, whatever the number of processes recovering), then settled
 * from what the log recorded: all steps through → completed; otherwise the completed steps are
 * compensated, newest first. What cannot be settled — a step recorded `running` (its outcome is
 * unknown: it may have had its effect, and there is no output to compensate it with), a step the
 * saga no longer defines, a log entry that cannot be read — is reported and the run marked
 * `attention`; a compensation that failed leaves the run `compensating`, taken again by a later
 * `recover()` once its lease has lapsed.
 */
import type { Clock } from '../core/clock.js';
import { fromJson } from '../core/json.js';
import type { Compensator, Undo } from './compensation.js';
import { Journal } from './journal.js';
import type { ReadStep } from './options.js';
import type { ClaimedRun, SagaLog } from './store.js';

/** Why a recovered run needs a person to look at it. */
export type AttentionReason = 'step-in-doubt' | 'unknown-step' | 'compensation-failed' | 'unreadable';

/** A run `recover()` could not settle by itself, and why. */
export interface SagaAttention {
  readonly sagaId: string;
  /** The step concerned (none for an unreadable run). */
  readonly step: string | undefined;
  /**
   * `step-in-doubt`: the process died while the step ran, so whether it had its effect is
   * unknown, and it has no output to compensate it with (the other steps were compensated).
   * `unknown-step`: the log holds a step this saga does not define (it changed since the run).
   * `compensation-failed`: its compensation failed for good (see `error`); the run is taken again
   * by a later `recover()`. `unreadable`: the run's entries in the log are not valid JSON.
   */
  readonly reason: AttentionReason;
  readonly error?: unknown;
}

/** What `recover()` did. */
export interface RecoverResult {
  /** Every run it claimed, in the order it did. */
  readonly recovered: readonly string[];
  /** The runs whose every step had completed: recorded completed, nothing undone. */
  readonly completed: readonly string[];
  /** The runs now fully compensated. */
  readonly compensated: readonly string[];
  /** What it could not settle (a run may appear more than once, once per step). */
  readonly needsAttention: readonly SagaAttention[];
}

/** What a recovery needs of its saga. */
export interface Recovery {
  readonly name: string;
  readonly log: SagaLog;
  readonly leaseMs: number;
  readonly clock: Clock;
  readonly compensator: Compensator;
  readonly definitions: readonly ReadStep[];
  readonly signal: AbortSignal | undefined;
  /** A fresh owner id. */
  owner(): string;
}

/** The outcome of settling one run. */
type Settled = 'completed' | 'compensated' | 'unsettled';

/** Claims and settles runs until none is left (or `signal` aborts); see the module doc. */
export async function recoverRuns(recovery: Recovery): Promise<RecoverResult> {
  const { log, name, leaseMs, clock, signal } = recovery;
  const result = { recovered: [] as string[], completed: [] as string[], compensated: [] as string[] };
  const needsAttention: SagaAttention[] = [];
  while (signal?.aborted !== true) {
    const owner = recovery.owner();
    const sentAt = clock.now();
    const run = await log.claim(name, owner, leaseMs);
    // A run claimed twice by one call failed to settle just now: leave it for a later call.
    if (run === undefined || result.recovered.includes(run.id)) break;
    result.recovered.push(run.id);
    const journal = new Journal(log, { name, id: run.id, owner, leaseMs }, clock, sentAt, undefined);
    try {
      const settled = await settle(recovery, run, journal, needsAttention);
      if (settled !== 'unsettled') result[settled].push(run.id);
    } finally {
      journal.stop();
    }
  }
  return { ...result, needsAttention };
}

/** Settles one claimed run; reports what it cannot settle into `attention`. */
async function settle(
  recovery: Recovery,
  run: ClaimedRun,
  journal: Journal,
  attention: SagaAttention[],
): Promise<Settled> {
  const sagaId = run.id;
  const byName = new Map(recovery.definitions.map((d) => [d.name, d]));
  let input: unknown;
  const undo: Undo[] = [];
  const doubts: SagaAttention[] = [];
  try {
    input = fromJson(run.input);
    for (const logged of run.steps) {
      const step = byName.get(logged.step);
      if (step === undefined) doubts.push({ sagaId, step: logged.step, reason: 'unknown-step' });
      else if (logged.state === 'running')
        doubts.push({ sagaId, step: logged.step, reason: 'step-in-doubt' });
      else if (logged.state === 'done' || logged.state === 'compensating')
        undo.push({ step, position: logged.position, output: fromJson(logged.output) });
    }
  } catch (error) {
    attention.push({ sagaId, step: undefined, reason: 'unreadable', error });
    await journal.note({ status: 'attention' });
    return 'unsettled';
  }
  if (run.status === 'running' && doubts.length === 0 && wentThrough(recovery.definitions, run)) {
    await journal.note({ status: 'completed' });
    return 'completed';
  }
  if (run.status === 'running') await journal.note({ status: 'compensating' });
  const { errors } = await recovery.compensator.compensate(undo.reverse(), input, sagaId, journal, true);
  // Another process took the run over (this one was too slow): it settles it.
  if (journal.lost) return 'unsettled';
  for (const { step, error } of errors)
    attention.push({ sagaId, step, reason: 'compensation-failed', error });
  attention.push(...doubts);
  if (errors.length > 0) return 'unsettled';
  if (doubts.length > 0) {
    await journal.note({ status: 'attention' });
    return 'unsettled';
  }
  await journal.note({ status: 'compensated' });
  return 'compensated';
}

/** True when every step of the saga is recorded done (or skipped, for an optional one). */
function wentThrough(definitions: readonly ReadStep[], run: ClaimedRun): boolean {
  const states = new Map(run.steps.map((s) => [s.step, s.state]));
  return definitions.every((d) => {
    const state = states.get(d.name);
    return state === 'done' || state === 'skipped';
  });
}
