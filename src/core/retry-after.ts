/**
 * `Retry-After`: how long a failed call asks its caller to wait, from bulwark's `retryAfterMs` or an
 * HTTP `Retry-After` header (delay-seconds or HTTP-date, RFC 9110 §10.2.3), found on the error or
 * along its causes.
 */
import { children, enter, get, isObject, MAX_DEPTH, newWalk, type Walk } from './error-walk.js';
import { isResilienceError } from './errors.js';
import { show } from './validate.js';

function checkNow(nowMs: unknown): void {
  if (!Number.isFinite(nowMs)) {
    throw new TypeError(`expected "nowMs" to be a finite number, got ${show(nowMs)}`);
  }
}

const delaySecondsPattern = /^(?:\d+(?:\.\d*)?|\.\d+)$/;
const months = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const shortDay = '(?:mon|tue|wed|thu|fri|sat|sun)';
const longDay = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const time = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate; weekday optional, `UTC` accepted). */
const imfFixdate = new RegExp(
  `^(?:${shortDay},\\s*)?(\\d{1,2})\\s+([a-z]{3})\\s+(\\d{4})\\s+${time}\\s+(?:gmt|utc)$`,
  'i',
);
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete RFC 850; a four-digit year accepted). */
const rfc850Date = new RegExp(
  `^${longDay},\\s*(\\d{1,2})-([a-z]{3})-(\\d{2}|\\d{4})\\s+${time}\\s+gmt$`,
  'i',
);
/** `Sun Nov  6 08:49:37 1994` (obsolete asctime). */
const asctimeDate = new RegExp(`^${shortDay}\\s+([a-z]{3})\\s+(\\d{1,2})\\s+${time}\\s+(\\d{4})$`, 'i');

/** Epoch ms of a calendar date in UTC, or undefined when a field is out of range (Feb 30). */
function utc(year: number, monthName: string, day: number, hour: number, minute: number, second: number) {
  const month = months.indexOf(monthName.toLowerCase());
  if (month === -1 || hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  if (date.getUTCDate() !== day) return undefined; // day 0 or 31 Feb rolled into another month
  date.setUTCHours(hour, minute, second, 0); // a leap second (60) rolls into the next minute
  return date.getTime();
}

function parseHttpDate(text: string, nowMs: number): number | undefined {
  let match = imfFixdate.exec(text);
  if (match) {
    const [, day, month, year, h, m, s] = match as unknown as string[];
    return utc(Number(year), month!, Number(day), Number(h), Number(m), Number(s));
  }
  match = rfc850Date.exec(text);
  if (match) {
    const [, day, month, yy, h, m, s] = match as unknown as string[];
    let year = Number(yy);
    if (yy!.length === 2) {
      // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is in the past century.
      const nowYear = new Date(nowMs).getUTCFullYear();
      year += nowYear - (nowYear % 100);
      if (year > nowYear + 50) year -= 100;
    }
    return utc(year, month!, Number(day), Number(h), Number(m), Number(s));
  }
  match = asctimeDate.exec(text);
  if (match) {
    const [, month, day, h, m, s, year] = match as unknown as string[];
    return utc(Number(year), month!, Number(day), Number(h), Number(m), Number(s));
  }
  return undefined;
}

/** parseRetryAfter without the `nowMs` check; HTTP-dates are skipped when `nowMs` is undefined. */
function retryAfterValue(value: unknown, nowMs: number | undefined): number | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (delaySecondsPattern.test(text)) {
    const ms = Math.round(Number(text) * 1000);
    return Number.isFinite(ms) ? ms : undefined;
  }
  if (nowMs === undefined) return undefined;
  const at = parseHttpDate(text, nowMs);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3) into milliseconds from `nowMs`.
 *
 * - delay-seconds (`"120"`; decimals such as `"1.5"` tolerated; a number is taken as seconds) →
 *   seconds × 1000, rounded to whole milliseconds;
 * - HTTP-date in IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), obsolete RFC 850
 *   (`Sunday, 06-Nov-94 08:49:37 GMT`, two-digit years read as RFC 9110 says) or asctime
 *   (`Sun Nov  6 08:49:37 1994`) form, case-insensitive → `max(0, date - nowMs)`;
 * - anything else (negative numbers, `NaN`, other date formats, `null`, `undefined`) → `undefined`.
 *
 * Never returns a negative number; the result is not capped (cap it where you wait). Throws a
 * `TypeError` only when `nowMs` is not a finite number.
 *
 * @example
 * parseRetryAfter('120', clock.now()); // 120_000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.UTC(2015, 9, 21, 7, 27, 30)); // 30_000
 * parseRetryAfter('soon', clock.now()); // undefined
 */
export function parseRetryAfter(
  value: string | number | null | undefined,
  nowMs: number,
): number | undefined {
  checkNow(nowMs);
  return retryAfterValue(value, nowMs);
}

/** The raw `Retry-After` value in a headers object: plain (any-case key) or Headers-like (`get`). */
function retryAfterHeader(headers: unknown): unknown {
  if (!isObject(headers)) return undefined;
  const getter = get(headers, 'get');
  // Stryker disable next-line ConditionalExpression: (true) calling a getter that is no function throws, and the catch reads the object as a plain one; (false) is killed by the Headers tests
  if (typeof getter === 'function') {
    try {
      const value: unknown = getter.call(headers, 'retry-after');
      if (value !== undefined && value !== null) return value;
    } catch {
      // not a Headers after all; read it as a plain object
    }
  }
  let keys: string[];
  try {
    keys = Object.keys(headers);
  } catch {
    return undefined;
  }
  for (const key of keys) {
    if (key.toLowerCase() !== 'retry-after') continue;
    const value = get(headers, key);
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function ownRetryAfter(value: object, nowMs: number | undefined): number | undefined {
  let resilience = false;
  try {
    resilience = isResilienceError(value);
  } catch {
    // hostile: read it as a foreign one
  }
  if (resilience) {
    const ms = get(value, 'retryAfterMs');
    if (typeof ms === 'number' && !Number.isNaN(ms)) return Math.max(0, ms);
  }
  for (const holder of [value, get(value, 'response')]) {
    if (!isObject(holder)) continue;
    const ms = retryAfterValue(retryAfterHeader(get(holder, 'headers')), nowMs);
    if (ms !== undefined) return ms;
  }
  return undefined;
}

function retryAfterIn(
  value: unknown,
  depth: number,
  nowMs: number | undefined,
  walk: Walk,
): number | undefined {
  if (!enter(value, walk)) return undefined;
  const own = ownRetryAfter(value, nowMs);
  if (own !== undefined || depth >= MAX_DEPTH) return own;
  for (const child of children(value)) {
    const ms = retryAfterIn(child, depth + 1, nowMs, walk);
    if (ms !== undefined) return ms;
  }
  return undefined;
}

/**
 * How long the error asks the caller to wait before trying again, in milliseconds, or `undefined`
 * when it does not say. Reads bulwark's `retryAfterMs` and a `Retry-After` header in `headers` or
 * `response.headers` (a plain object with a key in any case, or anything with a `get()` such as
 * `Headers` or axios' `AxiosHeaders`), on the error and then along its causes as {@link classify}
 * walks them; the first one found wins. Header values are read by {@link parseRetryAfter}. Without
 * `nowMs`, a `Retry-After` given as an HTTP-date is skipped (delay-seconds and `retryAfterMs` still
 * count): pass the time when you know it.
 *
 * Never negative; never throws on hostile errors. Throws a `TypeError` when a `nowMs` is given that
 * is not a finite number.
 *
 * @example
 * const waitMs = retryAfterOf(error, clock.now()) ?? backoff(retry);
 * retryAfterOf(error); // 2000 for a 429 with `retry-after: 2`
 */
export function retryAfterOf(error: unknown, nowMs?: number | undefined): number | undefined {
  if (nowMs !== undefined) checkNow(nowMs);
  let ms: number | undefined;
  try {
    ms = retryAfterIn(error, 0, nowMs, newWalk());
  } catch {
    // a hostile header value (a Proxy array whose reads throw): no wait is stated
  }
  return ms;
}

/**
 * The longest wait bulwark ever advertises to a client: 24 hours. A longer `Retry-After` (an
 * upstream's `1e22`, a breaker isolated until `reset()`, a weekly quota) is stated as this; the
 * client comes back after a day and is told again.
 */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * A wait as bulwark states it to a client: whole milliseconds, rounded up, from 0 to
 * {@link MAX_RETRY_AFTER_MS}. `NaN` and negative waits are 0, `Infinity` is the maximum.
 */
export function clampRetryAfterMs(ms: number): number {
  if (!(ms > 0)) return 0;
  // Stryker disable next-line EqualityOperator: at exactly the maximum both branches give it (it is a whole number)
  return ms >= MAX_RETRY_AFTER_MS ? MAX_RETRY_AFTER_MS : Math.ceil(ms);
}

/**
 * The value of a `Retry-After` header for a wait of `ms`: whole seconds, rounded up, at least 1 (a
 * refusal that says "retry now" invites a stampede) and at most 86 400 ({@link MAX_RETRY_AFTER_MS}).
 * The one place every adapter computes the header from; send `String(seconds)` and, in a body,
 * `seconds * 1000` so the two agree.
 *
 * @example
 * retryAfterSeconds(9_999.738); // 10
 * retryAfterSeconds(1e25); // 86_400
 */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(clampRetryAfterMs(ms) / 1000));
}
