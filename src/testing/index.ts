/**
 * `bulwark/testing`: deterministic time and randomness for tests of code that uses bulwark.
 */
export { FakeClock } from './fake-clock.js';
export {
  type MakePolicy,
  type PolicyFixture,
  type PolicyUnderTest,
  policyConformance,
} from './policy-conformance.js';
export {
  type ConformanceRunner,
  type RateLimitStoreFixture,
  rateLimitStoreConformance,
} from './rate-limit-conformance.js';
export { seededRandom } from './seeded-random.js';
