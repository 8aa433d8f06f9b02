/**
 * The values the Redis stores send and read back, checked in one place: arguments a script can
 * take byte for byte (a `TypeError` naming the argument otherwise), and replies decoded strictly (a
 * reply of the wrong shape is `undefined`, which each store reports as `StoreUnavailableError`).
 */
import { positiveInteger, show } from '../../core/validate.js';

/** A whole number of milliseconds Redis can take (`PEXPIRE`): a positive safe integer. */
export function wholeMs(name: string, value: unknown): number {
  positiveInteger(name, value);
  if ((value as number) > Number.MAX_SAFE_INTEGER)
    throw new TypeError(`expected "${name}" to be a positive safe integer, got ${show(value)}`);
  return value as number;
}

/** A string Redis keeps byte for byte: well-formed UTF-16 (a lone surrogate would become U+FFFD). */
export function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`expected "${name}" to be a string, got ${show(value)}`);
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed())
    throw new TypeError(
      `expected "${name}" to be well-formed UTF-16 (no lone surrogate), got ${show(value)}`,
    );
  return value;
}

/** A bulk string reply as a string (ioredis gives strings; a Buffer is decoded as UTF-8 alike). */
export function replyText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return undefined;
}

/**
 * A reply holding a non-negative safe integer, as a number: an integer reply, or a bulk string of
 * decimal digits (how the scripts send fences, so that no double rounding stands between Lua and
 * here). Anything else, a fraction or a number past 2^53 − 1 included, is `undefined`.
 */
export function replySafeInteger(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  // Stryker disable next-line StringLiteral: no reply text (not a string) reads as any text without digits would: refused
  const digits = replyText(value) ?? '';
  if (!/^\d{1,16}$/.test(digits)) return undefined;
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : undefined;
}
