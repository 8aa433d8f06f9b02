/**
 * When half-open probes are admitted and when their outcomes decide. Two rules share one shape:
 * - first failure (the default): `probes` at once, each ending frees its place; `successThreshold`
 *   successes close, the first failure re-opens;
 * - sampling (`halfOpenSuccessRate`): `probes` in all, at once if they come at once; an ending
 *   probe keeps its place, so no more are admitted until the decision. It closes once the
 *   successes reach `halfOpenSuccessRate` of `probes`, and re-opens once the failures make that
 *   impossible; so it decides after `probes` outcomes at the latest.
 */
export interface ProbeRule {
  /** Probes admitted at once (sampling: in all, until the decision). */
  readonly probes: number;
  /** Whether a probe that gave an outcome keeps its place until the decision (sampling). */
  readonly sampled: boolean;
  /** Probe successes that close the circuit. */
  readonly successesToClose: number;
  /** Probe failures that re-open it. */
  readonly failuresToOpen: number;
}

/**
 * Half-open's rule from the options: the first failure re-opens (`successThreshold` successes
 * close, default 1), or a sample of `probes` at `successRate` (0 < successRate ≤ 1).
 */
export function probeRule(
  probes: number,
  successThreshold: number | undefined,
  successRate: number | undefined,
): ProbeRule {
  if (successRate === undefined) {
    return { probes, sampled: false, successesToClose: successThreshold ?? 1, failuresToOpen: 1 };
  }
  if (successThreshold !== undefined) {
    throw new TypeError('expected "successThreshold" or "halfOpenSuccessRate", not both');
  }
  // The fewest successes whose share of the probes reaches the rate, judged as `successes / probes
  // >= successRate` (the float product may round up past an exact integer: step back then).
  let successesToClose = Math.ceil(successRate * probes);
  if ((successesToClose - 1) / probes >= successRate) successesToClose--;
  return { probes, sampled: true, successesToClose, failuresToOpen: probes - successesToClose + 1 };
}

/** What the probes of the current half-open period decided. */
export type ProbeDecision = 'close' | 'open' | undefined;

/** The probes of one half-open period: admission and decision by a {@link ProbeRule}. */
export class Probes {
  private running = 0;
  private successes = 0;
  private failures = 0;

  constructor(private readonly rule: ProbeRule) {}

  /** Takes a probe's place; false when every place is taken (the call is refused). */
  take(): boolean {
    const rule = this.rule;
    const taken = rule.sampled ? this.running + this.successes + this.failures : this.running;
    if (taken >= rule.probes) return false;
    this.running++;
    return true;
  }

  /** A probe ended without evidence (its caller left): its place is free again. */
  free(): void {
    this.running--;
  }

  /** A probe ended as a failure or a success: the decision, if this outcome makes one. */
  settle(failed: boolean): ProbeDecision {
    this.running--;
    if (failed) return ++this.failures >= this.rule.failuresToOpen ? 'open' : undefined;
    return ++this.successes >= this.rule.successesToClose ? 'close' : undefined;
  }

  /** Forgets every probe: a new half-open period, or none. */
  clear(): void {
    this.running = 0;
    this.successes = 0;
    this.failures = 0;
  }
}
