/**
 * The rate-limit headers of the IETF httpapi draft "RateLimit header fields for HTTP"
 * (draft-ietf-httpapi-ratelimit-headers-10): `RateLimit-Policy: "<name>";q=<limit>;w=<seconds>`
 * (one item per limit) and `RateLimit: "<name>";r=<remaining>;t=<seconds>`; and, for clients written against older
 * servers, the legacy `X-RateLimit-*` headers as express-rate-limit sends them.
 */
import type { CombinedRateLimitResult } from '../rate-limit/combined-result.js';
import type { RateLimitResult, RateLimitRule } from '../rate-limit/store.js';

/**
 * The headers of one limiter decision, in lower case (as Node sends them): `ratelimit-policy`
 * always, and `ratelimit` unless the decision is a fail-open fallback (which knows nothing about
 * the quota: it says nothing rather than something false). No `pk`: it would echo the key.
 *
 * For limiters combined by `rateLimiter.all()`, give their `rules` and the combined decision:
 * `ratelimit-policy` lists every limit (`"second";q=10;w=1, "hour";q=1000;w=3600`) and `ratelimit`
 * names the binding one with its own remaining units and reset (`result.binding`).
 *
 * @example
 * const result = await limiter.take('downloads', bytes);
 * for (const [name, value] of Object.entries(rateLimitHeaders(limiter.rule, result))) res.setHeader(name, value);
 */
export function rateLimitHeaders(
  rules: RateLimitRule | readonly RateLimitRule[],
  result: RateLimitResult | CombinedRateLimitResult,
): Record<string, string> {
  const several = isRuleList(rules);
  const headers: Record<string, string> = {
    'ratelimit-policy': several ? policiesHeader(rules) : policyHeader(rules),
  };
  if (result.fallback !== 'fail-open') {
    const binding = (result as Partial<CombinedRateLimitResult>).binding;
    const rule = binding?.rule ?? (several ? rules[0]! : rules);
    const own = binding?.result ?? result;
    headers.ratelimit = `"${rule.name}";r=${own.remaining};t=${Math.ceil(own.resetMs / 1000)}`;
  }
  return headers;
}

function isRuleList(rules: RateLimitRule | readonly RateLimitRule[]): rules is readonly RateLimitRule[] {
  return Array.isArray(rules);
}

/**
 * The legacy headers of one limiter decision, in lower case, as express-rate-limit's
 * `legacyHeaders` sends them: `x-ratelimit-limit` (the capacity `remaining` counts down from: the
 * rule's `burst`), `x-ratelimit-remaining`, and `x-ratelimit-reset`, the time the key is back at
 * full capacity as Unix epoch seconds, rounded up (`nowMs + resetMs`; `nowMs` is the server's
 * wall clock, which clients compare with the response's `Date`). A fail-open decision gets
 * `x-ratelimit-limit` only: it knows nothing about the quota.
 *
 * @example
 * const result = await limiter.take('downloads', bytes);
 * const headers = legacyRateLimitHeaders(result, clock.now()); // clock: the one you gave the limiter (systemClock by default)
 * for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
 */
export function legacyRateLimitHeaders(result: RateLimitResult, nowMs: number): Record<string, string> {
  const headers: Record<string, string> = { 'x-ratelimit-limit': String(result.limit) };
  if (result.fallback !== 'fail-open') {
    headers['x-ratelimit-remaining'] = String(result.remaining);
    headers['x-ratelimit-reset'] = String(Math.ceil((nowMs + result.resetMs) / 1000));
  }
  return headers;
}

const policies = new WeakMap<RateLimitRule, string>();
const policyLists = new WeakMap<readonly RateLimitRule[], string>();

/** Every rule's policy, comma-separated (a structured-field list), computed once per list. */
function policiesHeader(rules: readonly RateLimitRule[]): string {
  let header = policyLists.get(rules);
  // Stryker disable next-line ConditionalExpression: (true) computing the header again gives the same string: the map only caches it
  if (header === undefined) {
    header = rules.map(policyHeader).join(', ');
    policyLists.set(rules, header);
  }
  return header;
}

/**
 * `"<name>";q=<quota>;w=<window seconds>`, computed once per rule. The draft's window is a whole
 * number of seconds: a period that is not one is stated as the same rate over
 * `ceil(periodMs / 1000)` seconds (10 per 500 ms → `q=20;w=1`).
 */
function policyHeader(rule: RateLimitRule): string {
  let header = policies.get(rule);
  // Stryker disable next-line ConditionalExpression: (true) computing the header again gives the same string: the map only caches it
  if (header === undefined) {
    const seconds = rule.periodMs / 1000;
    let q = rule.limit;
    let w = seconds;
    if (!Number.isInteger(seconds)) {
      w = Math.ceil(seconds);
      q = Math.floor((rule.limit * w * 1000) / rule.periodMs);
    }
    header = `"${rule.name}";q=${q};w=${w}`;
    policies.set(rule, header);
  }
  return header;
}
