/**
 * The observable gauges of telemetry.ts: `bulwark.circuit.state` (0 closed, 1 open, 2 half-open,
 * 3 isolated), `bulwark.in_flight` and `bulwark.queue.depth`. A policy registers what it reports
 * once, when built (whether or not an SDK is registered yet); the gauges read every live policy
 * at each collection. Policies are held weakly: one that is no longer used is dropped, never kept
 * alive by its gauge.
 */
import type { Attributes } from './telemetry.js';

/** The gauges' names: a contract (docs/observability.md). */
export type GaugeName = 'bulwark.circuit.state' | 'bulwark.in_flight' | 'bulwark.queue.depth';

const descriptions: Readonly<Record<GaugeName, string>> = {
  'bulwark.circuit.state': 'Circuit breaker state: 0 closed, 1 open, 2 half-open, 3 isolated',
  'bulwark.in_flight': 'Calls running inside an admission policy',
  'bulwark.queue.depth': 'Calls waiting for admission',
};

interface Source {
  readonly owner: WeakRef<object>;
  readonly read: (owner: object) => number;
  readonly attributes: Attributes;
}

interface ObservableResult {
  observe(value: number, attributes?: Attributes): void;
}
interface GaugeMeter {
  createObservableGauge(
    name: string,
    options?: object,
  ): { addCallback(callback: (result: ObservableResult) => void): void };
}

/** Every policy's gauge readings, by gauge. */
class TelemetryGauges {
  private readonly sources = new Map<GaugeName, Set<Source>>();
  private readonly finalizer = new FinalizationRegistry<{ gauge: GaugeName; source: Source }>(
    // Stryker disable next-line OptionalChaining,ArrowFunction: (.get(gauge).delete) a source is registered only after its gauge's set exists, and no set is ever removed; (() => undefined) runs only once an owner is garbage-collected (no test can force GC), and a dead owner's source is skipped by its deref() anyway
    ({ gauge, source }) => this.sources.get(gauge)?.delete(source),
  );

  /** Reports `read(owner)` on `gauge` with `attributes` for as long as `owner` lives. */
  add<O extends object>(
    gauge: GaugeName,
    owner: O,
    attributes: Attributes,
    read: (owner: O) => number,
  ): void {
    const source: Source = { owner: new WeakRef(owner), read: read as (owner: object) => number, attributes };
    let set = this.sources.get(gauge);
    if (set === undefined) {
      set = new Set();
      this.sources.set(gauge, set);
    }
    set.add(source);
    // Stryker disable next-line ObjectLiteral: ({}) runs only once the owner is garbage-collected (no test can force GC); a dead owner's source is skipped by its deref() anyway
    this.finalizer.register(owner, { gauge, source });
  }

  /** Creates the gauges on `meter` (once per resolved meter), observing every live source. */
  register(meter: GaugeMeter): void {
    for (const gauge of Object.keys(descriptions) as GaugeName[]) {
      meter.createObservableGauge(gauge, { description: descriptions[gauge] }).addCallback((result) => {
        for (const source of this.sources.get(gauge) ?? []) {
          const owner = source.owner.deref();
          // Stryker disable next-line ConditionalExpression: (true) an owner is undefined only once garbage-collected, which no test can force
          if (owner !== undefined) result.observe(source.read(owner), source.attributes);
        }
      });
    }
  }
}

/** The process's gauges. */
export const telemetryGauges = new TelemetryGauges();

const circuitStates: Readonly<Record<string, number>> = { closed: 0, open: 1, 'half-open': 2, isolated: 3 };

/**
 * Registers the gauges a built-in policy offers, found by what it exposes: `inFlight` →
 * `bulwark.in_flight`, `queued` → `bulwark.queue.depth`, a circuit `state` →
 * `bulwark.circuit.state`. Called once per policy, from the gate's `configure`.
 */
export function reportGauges(policy: object, pattern: string, name: string): void {
  const attributes = { 'bulwark.pattern': pattern, 'bulwark.policy': name };
  if ('inFlight' in policy) {
    telemetryGauges.add('bulwark.in_flight', policy as { inFlight: number }, attributes, (p) => p.inFlight);
  }
  if ('queued' in policy) {
    telemetryGauges.add('bulwark.queue.depth', policy as { queued: number }, attributes, (p) => p.queued);
  }
  // Stryker disable next-line LogicalOperator: (||) the circuit breaker is the only gated policy with a `state`, and reportGauges is internal to the gate
  if (pattern === 'circuit-breaker' && 'state' in policy) {
    telemetryGauges.add(
      'bulwark.circuit.state',
      policy as { state: string },
      { 'bulwark.policy': name },
      // Stryker disable next-line UnaryOperator: (+1) every breaker state is in the table: the -1 is never reached
      (p) => circuitStates[p.state] ?? -1,
    );
  }
}
