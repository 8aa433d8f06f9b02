/**
 * What kind of failure an error is. Retry, the circuit breaker and the HTTP edge decide from the
 * kind, never from message strings. See `classify()`.
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
