/**
 * Reading foreign errors safely: property reads that never throw, and a bounded, cycle-safe walk
 * over `cause` chains and AggregateError members. Shared by `classify` and `retryAfterOf`.
 */

/** How many levels of `cause` / `errors` below the thrown value are read. */
export const MAX_DEPTH = 8;
/** How many objects one call reads at most (bounds wide AggregateErrors). */
export const MAX_NODES = 64;

/** An object read by key. */
export type Bag = Record<PropertyKey, unknown>;

/** True for non-null objects (errors, responses, headers...). */
export function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** Reads a property without ever throwing (getters and Proxy traps may throw). */
export function get(target: object, key: PropertyKey): unknown {
  try {
    return (target as Bag)[key];
  } catch {
    // a throwing getter or trap reads as absent
  }
  return undefined;
}

/** A property that is a string, read without ever throwing; otherwise undefined. */
export function getString(target: object, key: PropertyKey): string | undefined {
  const value = get(target, key);
  return typeof value === 'string' ? value : undefined;
}

/** The state of one bounded, cycle-safe walk: the objects seen and how many were read. */
export interface Walk {
  readonly seen: Set<object>;
  nodes: number;
}

/** Visits `value` if it is an unseen object within the bounds; false when it must be skipped. */
export function enter(value: unknown, walk: Walk): value is object {
  if (!isObject(value) || walk.seen.has(value) || walk.nodes >= MAX_NODES) return false;
  walk.seen.add(value);
  walk.nodes++;
  return true;
}

/**
 * The children of a node: its `cause`, then the first {@link MAX_NODES} members of `errors`
 * (AggregateError). May hold `undefined` and other primitives, which {@link enter} skips uncounted.
 */
export function children(value: object): unknown[] {
  const result: unknown[] = [get(value, 'cause')];
  const errors = get(value, 'errors');
  // Stryker disable next-line BooleanLiteral: it stays false only when Array.isArray throws (a revoked Proxy), and get() on that reads no length either
  let isArray = false;
  try {
    isArray = Array.isArray(errors);
  } catch {
    // a revoked Proxy
  }
  if (isArray) {
    const length = get(errors as object, 'length');
    const count = typeof length === 'number' ? Math.min(length, MAX_NODES) : 0;
    for (let i = 0; i < count; i++) result.push(get(errors as object, i));
  }
  return result;
}

/** A fresh walk. */
export function newWalk(): Walk {
  return { seen: new Set(), nodes: 0 };
}
