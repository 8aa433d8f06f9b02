/**
 * What a timeout policy is told, and the declared schema that reads it once, at construction.
 */
import type { Clock } from '../core/clock.js';
import type { PolicyOptions } from '../core/policy-events.js';
import { policyFields } from '../core/policy-fields.js';
import {
  clockField,
  oneOf,
  type ReadOptions,
  readOptions,
  type Schema,
  withDefault,
} from '../core/read-options.js';

/** How a {@link timeout} treats an operation that is still running at the deadline. */
export type TimeoutMode = 'cooperative' | 'aggressive';

/** Options of {@link timeout}. */
export interface TimeoutOptions extends PolicyOptions<never> {
  /**
   * `cooperative`: abort the operation's signal and wait for it to settle. `aggressive`: also
   * reject at the deadline without waiting, even if the operation ignores its signal.
   * @default 'cooperative'
   */
  readonly mode?: TimeoutMode | undefined;
  /** @default systemClock */
  readonly clock?: Clock | undefined;
}

const timeoutModes: readonly TimeoutMode[] = ['cooperative', 'aggressive'];

const timeoutSchema = {
  // Stryker disable next-line StringLiteral: the mode is only ever compared with 'aggressive': any other default means cooperative
  mode: withDefault<TimeoutMode>('cooperative', oneOf(timeoutModes)),
  clock: clockField,
  ...policyFields<never>(),
} satisfies Schema<TimeoutOptions>;

/** Reads `timeout` options; a `TypeError` names the first bad one. */
export function readTimeoutOptions(options: TimeoutOptions | undefined): ReadOptions<typeof timeoutSchema> {
  return readOptions('timeout options', options, timeoutSchema);
}
