/**
 * What kind of failure an error is. Retry, the circuit breaker and the HTTP edge decide from the
 * kind, never from message strings. See `classify()`. Every set of kinds a pattern decides by is
 * defined here, once.
 */
export type Kind =
  | 'transient'
  | 'timeout'
  | 'unavailable'
  | 'rate_limited'
  | 'overloaded'
  | 'invalid'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'canceled'
  | 'internal';

/** Every kind, in declaration order. */
export const kinds: readonly Kind[] = [
  'transient',
  'timeout',
  'unavailable',
  'rate_limited',
  'overloaded',
  'invalid',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'canceled',
  'internal',
];

const transientKinds: ReadonlySet<Kind> = new Set<Kind>([
  'transient',
  'timeout',
  'unavailable',
  'rate_limited',
  'overloaded',
]);

/**
 * True for the kinds worth trying again after a pause: `transient`, `timeout`, `unavailable`,
 * `rate_limited`, `overloaded`. `internal` (a plain bug, an HTTP 500) is not among them.
 */
export function isTransientKind(kind: Kind): boolean {
  return transientKinds.has(kind);
}

const knownKinds: ReadonlySet<unknown> = new Set(kinds);

/** True when `value` is one of the {@link kinds}. */
export function isKind(value: unknown): value is Kind {
  return knownKinds.has(value);
}

const permanentKinds: ReadonlySet<Kind> = new Set<Kind>([
  'invalid',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
]);

/**
 * True for the kinds that the same request will meet again however often it is tried: `invalid`,
 * `unauthorized`, `forbidden`, `not_found`, `conflict`. A hedge stops at one.
 */
export function isPermanentKind(kind: Kind): boolean {
  return permanentKinds.has(kind);
}

const dependencyFailureKinds: ReadonlySet<Kind> = new Set<Kind>([
  'transient',
  'timeout',
  'unavailable',
  'overloaded',
  'internal',
]);

/**
 * True for the kinds that say a dependency is failing, which a circuit breaker counts toward
 * opening: `transient`, `timeout`, `unavailable`, `overloaded`, `internal`. Not `rate_limited` (the
 * dependency is healthy and asked us to slow down), a permanent kind (our request is wrong) or
 * `canceled` (the caller left).
 */
export function isDependencyFailureKind(kind: Kind): boolean {
  return dependencyFailureKinds.has(kind);
}
