/**
 * `bulwark/testing`: deterministic time and randomness for tests of code that uses bulwark, chaos
 * to inject into its policies and stores, a TCP fault proxy, and the conformance suites.
 */

export { type CacheLayerFixture, cacheLayerConformance } from './cache-layer-conformance.js';
export {
  type ChaosBehaviorOptions,
  type ChaosFaultOptions,
  type ChaosLatencyOptions,
  type ChaosOptions,
  type ChaosOutcomeOptions,
  type ChaosPolicy,
  type ChaosStrategy,
  type ChaosSwitch,
  chaos,
  type InjectedEvent,
  type InjectionOptions,
} from './chaos.js';
export { type ChaosStoreMode, type ChaosStoreOptions, chaosStore } from './chaos-store.js';
export type { ConformanceRunner } from './conformance-runner.js';
export { FakeClock } from './fake-clock.js';
export {
  type FaultProxy,
  type FaultProxyOptions,
  faultProxy,
  type ProxyCutOptions,
  type ProxyDirection,
} from './fault-proxy.js';
export {
  type IdempotencyStoreFixture,
  idempotencyStoreConformance,
} from './idempotency-conformance.js';
export {
  type FenceStoreFixture,
  fenceStoreConformance,
  type LockStoreFixture,
  lockStoreConformance,
} from './lock-conformance.js';
export {
  type MakePolicy,
  type PolicyFixture,
  type PolicyUnderTest,
  policyConformance,
} from './policy-conformance.js';
export {
  type RateLimitStoreFixture,
  rateLimitStoreConformance,
} from './rate-limit-conformance.js';
export { type SagaLogFixture, sagaLogConformance } from './saga-log-conformance.js';
export { seededRandom } from './seeded-random.js';
