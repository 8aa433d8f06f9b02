/**
 * OpenTelemetry metrics of every pattern, through `@opentelemetry/api` — an optional peer
 * dependency, loaded on first need, and a no-op until the application registers a MeterProvider.
 *
 * OTel JS has no delegating MeterProvider: a meter taken from the global API before an SDK is
 * registered stays a no-op forever. So nothing is resolved up front. Each call site asks
 * {@link telemetry}, which compares the registered provider (one property read on the API's
 * global slot, `Symbol.for('opentelemetry.js.api.1')`) with the one it resolved last, and resolves
 * the meter and instruments again only when it changed: a policy built before the SDK was
 * registered reports as soon as it is. While none is registered the answer is `undefined` and the
 * caller does nothing more (no clock read, no attribute object): that check is the whole cost.
 *
 * When the application's global API is an older minor version than our copy, our copy refuses its
 * registration (the API's own version check): we then report nothing, silently, as the API does.
 * Not installed: nothing is reported, nothing fails.
 */
import { createRequire } from 'node:module';
import { telemetryGauges } from './telemetry-gauges.js';

/** The instruments' names and units: a contract (docs/observability.md). */
export const instrumentNames = {
  events: 'bulwark.events',
  attemptDuration: 'bulwark.attempt.duration',
  pipelineDuration: 'bulwark.pipeline.duration',
} as const;

/**
 * What happened, as the `bulwark.event` attribute of `bulwark.events`: the values are a contract
 * (one table per pattern in docs/observability.md).
 */
export type TelemetryEvent =
  | 'retry'
  | 'give_up'
  | 'budget_exhausted'
  | 'rejected'
  | 'state_change'
  | 'hedge'
  | 'shed'
  | 'rate_limited'
  | 'store_error'
  | 'lock_acquired'
  | 'lock_lost'
  | 'stale_fence'
  | 'replay'
  | 'conflict'
  | 'cache_hit'
  | 'cache_miss'
  | 'load'
  | 'compensated'
  | 'dead_lettered'
  | 'delivered';

/** How a call a policy ran ended, as the `bulwark.outcome` attribute (a refusal is an event). */
export type TelemetryOutcome = 'success' | 'failure';

/** Attributes of one instrument record. */
export type Attributes = Readonly<Record<string, string>>;

/** The parts of the OTel API used here (structural: no import of its types at runtime). */
interface Counter {
  add(value: number, attributes?: Attributes): void;
}
interface Histogram {
  record(value: number, attributes?: Attributes): void;
}
interface ObservableResult {
  observe(value: number, attributes?: Attributes): void;
}
interface ObservableGauge {
  addCallback(callback: (result: ObservableResult) => void): void;
}
interface Meter {
  createCounter(name: string, options?: object): Counter;
  createHistogram(name: string, options?: object): Histogram;
  createObservableGauge(name: string, options?: object): ObservableGauge;
}
interface MetricsApi {
  getMeterProvider(): unknown;
  getMeter(name: string, version?: string): Meter;
}
interface Span {
  addEvent(name: string, attributes?: Attributes): void;
}
interface OtelApi {
  readonly metrics: MetricsApi;
  readonly trace: { getActiveSpan(): Span | undefined };
}

/** The resolved instruments of the registered MeterProvider. */
export interface Telemetry {
  readonly events: Counter;
  readonly attemptDuration: Histogram;
  readonly pipelineDuration: Histogram;
}

/**
 * Bucket bounds of the duration histograms, in seconds: fitted to calls from 0.5 ms to 10 s. The
 * SDK's default bounds (0, 5, 10, 25, … 10 000) are made for milliseconds: in seconds they would
 * put every call shorter than 5 s in one bucket.
 */
export const durationBuckets: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

const globalKey = Symbol.for('opentelemetry.js.api.1');
type GlobalSlot = { metrics?: unknown };
const globalSlot = globalThis as { [globalKey]?: GlobalSlot };

/**
 * The API's global slot once it exists: the API creates it at the application's first
 * registration (of anything: a tracer, a propagator, a meter) and keeps that object for the
 * process's life, adding and deleting its `metrics` as providers come and go.
 */
let slot: GlobalSlot | undefined;
/** Calls while the slot did not exist: `globalThis` is read on the first and every 64th. */
let unseen = 0;
/** The provider resolved last (undefined: none registered when last asked). */
let resolvedFor: unknown;
let resolved: Telemetry | undefined;

/**
 * The instruments of the MeterProvider registered now, or `undefined` when none is (or the API is
 * not installed, or refuses the registration).
 *
 * Costs one property read once the API's global slot exists. Before, a read of `globalThis` costs
 * more than the rest of a policy's bookkeeping, so it is made on the first call and then on every
 * 64th: a process whose first OpenTelemetry registration comes after its policies began running
 * may leave up to 63 calls unreported (an SDK registered at startup, before the first call, loses
 * nothing).
 */
export function telemetry(): Telemetry | undefined {
  let found = slot;
  if (found === undefined) {
    // Stryker disable next-line UpdateOperator: (unseen--) counting down reaches a multiple of 64 (0, -64, ...) on the same calls
    if ((unseen++ & 63) !== 0) return undefined;
    found = globalSlot[globalKey];
    if (found === undefined) return undefined;
    slot = found;
  }
  const provider = found.metrics;
  if (provider !== resolvedFor) {
    resolvedFor = provider;
    // Stryker disable next-line ConditionalExpression: (false) resolve(undefined) answers undefined too: the API's getMeterProvider() never returns undefined (a no-op provider when none is registered)
    resolved = provider === undefined ? undefined : resolve(provider);
  }
  return resolved;
}

/** Creates the instruments on the API's meter, if the API accepts `provider` as registered. */
function resolve(provider: unknown): Telemetry | undefined {
  const api = loadMetricsApi();
  if (api === undefined || api.getMeterProvider() !== provider) return undefined;
  const meter = api.getMeter('bulwark');
  const duration = (description: string) => ({
    description,
    unit: 's',
    advice: { explicitBucketBoundaries: durationBuckets },
  });
  const instruments: Telemetry = {
    events: meter.createCounter(instrumentNames.events, {
      description: 'What the resilience policies did: retries, refusals, state changes, ...',
      unit: '{event}',
    }),
    attemptDuration: meter.createHistogram(
      instrumentNames.attemptDuration,
      duration('Duration of each call a policy ran, admission included'),
    ),
    pipelineDuration: meter.createHistogram(
      instrumentNames.pipelineDuration,
      duration('Duration of each call through a pipeline of policies'),
    ),
  };
  telemetryGauges.register(meter);
  return instruments;
}

let api: OtelApi | null | undefined;

/** `@opentelemetry/api`, or undefined when the package is not installed. */
function loadApi(): OtelApi | undefined {
  if (api === undefined) {
    try {
      api = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch {
      api = null;
    }
  }
  return api ?? undefined;
}

/** `@opentelemetry/api`'s `metrics`, or undefined when the package is not installed. */
function loadMetricsApi(): MetricsApi | undefined {
  return loadApi()?.metrics;
}

/** Options of {@link telemetryOptions}. */
export interface TelemetryOptions {
  /**
   * Also record each event (retries, refusals — breaker, bulkhead, shed, rate limit —, hedges,
   * lock losses, …) as an event on the active span (`bulwark.<event>`, with the same attributes as
   * the counter, `error.type` included), for traces that show why a request was slow or refused.
   * No span is ever started per call (that would cost every call). Needs an OpenTelemetry tracer
   * provider and context manager registered by the application; without an active span nothing is
   * recorded.
   * @default false
   */
  readonly spanEvents?: boolean | undefined;
}

let spanEvents = false;

/**
 * Sets the process-wide telemetry options (today: `spanEvents`). Metrics need no option: they flow
 * as soon as the application registers an OpenTelemetry MeterProvider. Throws a `TypeError` for
 * an unknown option or a `spanEvents` that is not a boolean.
 *
 * @example
 * telemetryOptions({ spanEvents: true }); // retries and refusals show on the request's span
 */
export function telemetryOptions(options: TelemetryOptions): void {
  const { spanEvents: wanted, ...unknown } = options ?? ({} as TelemetryOptions);
  const extra = Object.keys(unknown)[0];
  if (extra !== undefined) throw new TypeError(`unknown telemetry option "${extra}" (known: spanEvents)`);
  if (wanted !== undefined && typeof wanted !== 'boolean') {
    throw new TypeError(`expected "spanEvents" to be a boolean, got ${typeof wanted}`);
  }
  spanEvents = wanted ?? false;
}

/**
 * The `error.type` attribute of an error: its string `code` (`ERR_CIRCUIT_OPEN`, `ECONNRESET`),
 * else its class name, else `_OTHER` (OTel's value for an unknown type). Never the message (high
 * cardinality, and it may hold user data).
 */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  const name = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : '_OTHER';
}

/**
 * Counts `event` of `policy` (a policy of `pattern`) on `bulwark.events`, with `error.type` when
 * an error caused it, and with `spanEvents` on records it on the active span. Does nothing while
 * no MeterProvider is registered and span events are off.
 */
export function countEvent(event: TelemetryEvent, pattern: string, policy: string, error?: unknown): void {
  const t = telemetry();
  // Stryker disable next-line ConditionalExpression: (false) with neither a provider nor span events the rest records nothing; the check only skips building the attributes
  if (t === undefined && !spanEvents) return;
  const attributes: Attributes =
    error === undefined
      ? { 'bulwark.event': event, 'bulwark.pattern': pattern, 'bulwark.policy': policy }
      : {
          'bulwark.event': event,
          'bulwark.pattern': pattern,
          'bulwark.policy': policy,
          'error.type': errorType(error),
        };
  t?.events.add(1, attributes);
  if (spanEvents) loadApi()?.trace.getActiveSpan()?.addEvent(`bulwark.${event}`, attributes);
}
