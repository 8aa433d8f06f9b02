/**
 * Overhead of a policy around a resolved async no-op: ours vs cockatiel 3.x and p-retry, in one
 * process and run. Prints ns/op above a bare call and the ratio ours ÷ peer.
 */

import { pipeline, retry, timeout } from 'bulwark';
import {
  ConsecutiveBreaker,
  circuitBreaker,
  retry as cRetry,
  timeout as cTimeout,
  wrap as cWrap,
  handleAll,
  TimeoutStrategy,
} from 'cockatiel';
import pRetry from 'p-retry';
import { type Case, measureAll, overheadReport } from './support.js';

const noop = async () => 1;

export default async function policyOverhead(): Promise<string> {
  const ours = {
    retry: retry({ maxAttempts: 3 }),
    timeout: timeout(1_000),
    timeoutAggressive: timeout(1_000, { mode: 'aggressive' }),
    pipeline: pipeline(timeout(1_000), retry({ maxAttempts: 3 })),
  };
  const peer = {
    retry: cRetry(handleAll, { maxAttempts: 2 }), // cockatiel counts retries: 2 retries = our 3 attempts
    timeout: cTimeout(1_000, TimeoutStrategy.Cooperative),
    timeoutAggressive: cTimeout(1_000, TimeoutStrategy.Aggressive),
    wrap: cWrap(cTimeout(1_000, TimeoutStrategy.Cooperative), cRetry(handleAll, { maxAttempts: 2 })),
    wrap3: cWrap(
      cRetry(handleAll, { maxAttempts: 2 }),
      circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
      cTimeout(1_000, TimeoutStrategy.Cooperative),
    ),
  };
  const cases: Case[] = [
    { name: 'bare call', fn: () => noop() },
    { name: 'bulwark retry', fn: () => ours.retry.execute(noop) },
    { name: 'cockatiel retry', fn: () => peer.retry.execute(noop) },
    { name: 'p-retry', fn: () => pRetry(noop, { retries: 2 }) },
    { name: 'bulwark timeout (cooperative)', fn: () => ours.timeout.execute(noop) },
    { name: 'cockatiel timeout (cooperative)', fn: () => peer.timeout.execute(noop) },
    { name: 'bulwark timeout (aggressive)', fn: () => ours.timeoutAggressive.execute(noop) },
    { name: 'cockatiel timeout (aggressive)', fn: () => peer.timeoutAggressive.execute(noop) },
    { name: 'bulwark pipeline(timeout, retry)', fn: () => ours.pipeline.execute(noop) },
    { name: 'cockatiel wrap(timeout, retry)', fn: () => peer.wrap.execute(noop) },
    { name: 'cockatiel wrap(retry, breaker, timeout)', fn: () => peer.wrap3.execute(noop) },
  ];
  const results = await measureAll(cases);
  const report = overheadReport('Policy overhead (resolved async no-op)', results, [
    ['retry ÷ cockatiel retry', 'bulwark retry', 'cockatiel retry', '≤ 1'],
    ['retry ÷ p-retry', 'bulwark retry', 'p-retry', '—'],
    [
      'timeout ÷ cockatiel timeout (cooperative)',
      'bulwark timeout (cooperative)',
      'cockatiel timeout (cooperative)',
      '≤ 0.1',
    ],
    [
      'timeout ÷ cockatiel timeout (aggressive)',
      'bulwark timeout (aggressive)',
      'cockatiel timeout (aggressive)',
      '≤ 0.1',
    ],
    [
      'pipeline(timeout, retry) ÷ cockatiel wrap(timeout, retry)',
      'bulwark pipeline(timeout, retry)',
      'cockatiel wrap(timeout, retry)',
      '≤ 0.1',
    ],
  ]);
  console.log(report);
  return report;
}
