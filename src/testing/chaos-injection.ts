/**
 * When chaos strikes: the options every chaos strategy and `chaosStore` share (`rate`, `random` or
 * `seed`, `enabled`), declared once, the per-call decision they make from them, and the check of
 * the `error` option both take.
 */

import { cryptoRandom, type Random } from '../core/random.js';
import {
  type Check,
  fraction,
  func,
  optional,
  type ReadOptions,
  required,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import { seededRandom } from './seeded-random.js';

/** Whether injecting is on: a fixed answer, or a function asked on every call. */
export type ChaosSwitch = boolean | (() => boolean);

/** How often, and whether, a chaos strategy or `chaosStore` injects. */
export interface InjectionOptions {
  /**
   * The share of calls that get the injection, from 0 (none) to 1 (every call). A call is injected
   * when `random() < rate`. Required.
   */
  readonly rate: number;
  /**
   * Where each call's draw in [0, 1) comes from. Give `random` or `seed`, not both.
   * @default crypto-random (or `seededRandom(seed)` with `seed`)
   */
  readonly random?: Random | undefined;
  /** An integer seed: `seed: 42` is `random: seededRandom(42)`, the same draws on every run. */
  readonly seed?: number | undefined;
  /**
   * Whether injecting is on, read on every call: `false`, or a function answering `false`, lets
   * the call through untouched and draws nothing. A function that throws fails that call.
   * @default true
   */
  readonly enabled?: ChaosSwitch | undefined;
}

const seedCheck: Check<number> = (name, value) => {
  if (!Number.isInteger(value))
    throw new TypeError(`expected "${name}" to be an integer, got ${show(value)}`);
  return value as number;
};

const switchCheck: Check<ChaosSwitch> = (name, value) => {
  if (typeof value !== 'boolean' && typeof value !== 'function') {
    throw new TypeError(`expected "${name}" to be a boolean or a function, got ${show(value)}`);
  }
  return value as ChaosSwitch;
};

/** An `error` option: an error (any object), or a function giving one. */
export const errorSource: Check<object> = (name, value) => {
  if (typeof value !== 'function' && (typeof value !== 'object' || value === null)) {
    throw new TypeError(
      `expected "${name}" to be an error (an object) or a function giving one, got ${show(value)}`,
    );
  }
  return value as object;
};

/** The schema fields of {@link InjectionOptions}, for each chaos factory's schema to spread. */
export const injectionFields = {
  rate: required(fraction),
  random: optional(func<Random>()),
  seed: optional(seedCheck),
  enabled: withDefault<ChaosSwitch>(true, switchCheck),
};

/**
 * The per-call decision of the options read: `enabled` first (no draw when off), then one draw.
 * Throws a `TypeError` when both `random` and `seed` were given.
 */
export function injectionDecider(options: ReadOptions<typeof injectionFields>): () => boolean {
  const { rate, random, seed, enabled } = options;
  if (random !== undefined && seed !== undefined) {
    throw new TypeError('expected "random" or "seed", not both: "seed" builds a random of its own');
  }
  const draw = random ?? (seed === undefined ? cryptoRandom : seededRandom(seed));
  if (enabled === false) return () => false;
  if (enabled === true) return () => draw() < rate;
  return () => enabled() && draw() < rate;
}
