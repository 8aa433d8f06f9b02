/**
 * `registry.policy(key)` keeps the policy contract, through `execute` and inside pipelines, for a
 * key's bulkhead (refused when its slot is taken) and a key's circuit breaker (refused isolated).
 */
import { describe, it } from 'vitest';
import { bulkhead } from '../admission/bulkhead.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { policyConformance } from '../testing/policy-conformance.js';
import { keyed } from './keyed.js';

const runner = { describe, it };

policyConformance(
  'keyed(bulkhead).policy(key)',
  ({ clock }) => {
    const registry = keyed(() => bulkhead({ maxConcurrent: 1, maxQueue: 0, clock }), { maxKeys: 2 });
    return {
      policy: registry.policy('tenant'),
      enforcesDeadline: false,
      refuse: () => void registry.execute('tenant', () => new Promise<never>(() => {})),
    };
  },
  runner,
);

policyConformance(
  'keyed(circuitBreaker).policy(key)',
  ({ clock }) => {
    const registry = keyed(() => circuitBreaker({ resetTimeoutMs: 10_000, clock }), { maxKeys: 2 });
    return {
      policy: registry.policy('host'),
      enforcesDeadline: false,
      refuse: () => registry.get('host').isolate(),
    };
  },
  runner,
);
