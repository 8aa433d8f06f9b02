/**
 * The policy contract suite on retry with `handleResult` and with a backoff that reads its context,
 * each through `execute` and inside pipelines (test/policy-conformance.test.ts covers the rest).
 * The suite's values are plain objects: a `handleResult` refusing them must still hand each back
 * (it gives up at once here, so no backoff sleep changes a call's duration).
 */
import { describe, it } from 'vitest';
import { isTransient } from '../core/classify.js';
import type { Policy } from '../core/policy.js';
import { policyConformance } from '../testing/policy-conformance.js';
import { constant, delays } from './backoff.js';
import { retryBudget } from './budget.js';
import { isRetriesExhaustedError } from './errors.js';
import { retry, retryIf } from './retry.js';

const runner = { describe, it };
const unwrap = (error: unknown): unknown => (isRetriesExhaustedError(error) ? error.cause : error);
const retrying = (policy: Policy) => ({ policy, unwrap, enforcesDeadline: false });
const never = () => false;
const always = () => true;

policyConformance(
  'retry({ handleResult }) accepting every value',
  ({ clock }) => retrying(retry({ clock, backoff: constant(10), handleResult: never })),
  runner,
);
policyConformance(
  'retryIf(isTransient, { handleResult, backoff: delays }) accepting every value',
  ({ clock }) =>
    retrying(
      retryIf((error) => isTransient(error), { clock, backoff: delays([10, 20]), handleResult: never }),
    ),
  runner,
);
policyConformance(
  'retry({ handleResult, maxAttempts: 1 }) refusing every value (gives up, resolving with it)',
  ({ clock }) => retrying(retry({ clock, maxAttempts: 1, handleResult: always })),
  runner,
);
policyConformance(
  'retry({ handleResult, budget }) refusing every value with the budget spent',
  ({ clock }) => ({
    policy: retry({
      clock,
      backoff: constant(10),
      handleResult: always,
      budget: retryBudget({ ratio: 0, minPerSecond: 0, clock }),
    }),
    enforcesDeadline: false,
  }),
  runner,
);
policyConformance(
  'retry({ backoff }) reading its context',
  ({ clock }) => retrying(retry({ clock, backoff: (n, { elapsedMs }) => 10 * n + elapsedMs })),
  runner,
);
