/**
 * Circuit breaker overhead per call on a resolved no-op, closed state: ours vs cockatiel 3.x
 * (ConsecutiveBreaker, SamplingBreaker) vs opossum 9, plus the smart composite vs cockatiel's
 * wrap(retry, breaker). One process, one run; prints overhead above a bare call and ratios.
 */

import { circuitBreaker, smartResilience } from 'bulwark';
import {
  ConsecutiveBreaker,
  circuitBreaker as cBreaker,
  retry as cRetry,
  timeout as cTimeout,
  wrap as cWrap,
  handleAll,
  SamplingBreaker,
  TimeoutStrategy,
} from 'cockatiel';
import Opossum from 'opossum';
import { type Case, measureAll, overheadReport } from './support.js';

const noop = async () => 1;

export default async function breakerOverhead(): Promise<string> {
  const ours = {
    consecutive: circuitBreaker({ failureThreshold: 5, resetTimeoutMs: 10_000 }),
    rate: circuitBreaker({ failureRate: { threshold: 0.5, windowMs: 10_000, minimumThroughput: 20 } }),
    smart: smartResilience(),
  };
  const peer = {
    consecutive: cBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    sampling: cBreaker(handleAll, {
      halfOpenAfter: 10_000,
      breaker: new SamplingBreaker({ threshold: 0.5, duration: 10_000, minimumRps: 2 }),
    }),
    opossum: new Opossum(noop),
    wrap: cWrap(
      cRetry(handleAll, { maxAttempts: 3 }),
      cBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    ),
    wrapTimeout: cWrap(
      cTimeout(3_000, TimeoutStrategy.Cooperative),
      cRetry(handleAll, { maxAttempts: 3 }),
      cBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
    ),
  };
  const cases: Case[] = [
    { name: 'bare call', fn: () => noop() },
    { name: 'bulwark breaker (consecutive)', fn: () => ours.consecutive.execute(noop) },
    { name: 'cockatiel breaker (consecutive)', fn: () => peer.consecutive.execute(noop) },
    { name: 'bulwark breaker (failure rate)', fn: () => ours.rate.execute(noop) },
    { name: 'cockatiel breaker (sampling)', fn: () => peer.sampling.execute(noop) },
    { name: 'opossum 9 fire (defaults)', fn: () => peer.opossum.fire() },
    { name: 'bulwark smartResilience (3 s call timeout)', fn: () => ours.smart.execute(noop) },
    { name: 'cockatiel wrap(retry, breaker)', fn: () => peer.wrap.execute(noop) },
    { name: 'cockatiel wrap(timeout, retry, breaker)', fn: () => peer.wrapTimeout.execute(noop) },
  ];
  const results = await measureAll(cases);
  peer.opossum.shutdown();
  const report = overheadReport('Circuit breaker overhead (resolved async no-op, closed)', results, [
    [
      'breaker ÷ cockatiel ConsecutiveBreaker',
      'bulwark breaker (consecutive)',
      'cockatiel breaker (consecutive)',
      '≤ 1.0',
    ],
    [
      'failure-rate breaker ÷ cockatiel SamplingBreaker',
      'bulwark breaker (failure rate)',
      'cockatiel breaker (sampling)',
      '≤ 1.0',
    ],
    ['breaker ÷ opossum 9', 'bulwark breaker (consecutive)', 'opossum 9 fire (defaults)', '≤ 0.2'],
    [
      'smartResilience ÷ cockatiel wrap(retry, breaker)',
      'bulwark smartResilience (3 s call timeout)',
      'cockatiel wrap(retry, breaker)',
      '—',
    ],
    [
      'smartResilience ÷ cockatiel wrap(timeout, retry, breaker)',
      'bulwark smartResilience (3 s call timeout)',
      'cockatiel wrap(timeout, retry, breaker)',
      '—',
    ],
  ]);
  console.log(report);
  return report;
}
