/**
 * bulwark: resilience patterns for Node.js services. Curated named exports; see docs/ for each
 * pattern.
 */

export {
  type BulkheadOptions,
  BulkheadPolicy,
  type BulkheadRejectedEvent,
  bulkhead,
} from './admission/bulkhead.js';
export {
  type ConcurrencyLimitOptions,
  ConcurrencyLimitPolicy,
  type ConcurrencyLimitRejectedEvent,
  concurrencyLimit,
} from './admission/concurrency-limit.js';
export {
  BulkheadFullError,
  type BulkheadLimits,
  type BulkheadRejection,
  ConcurrencyLimitError,
  isBulkheadFullError,
  isConcurrencyLimitError,
} from './admission/errors.js';
export {
  type LoadLimits,
  type LoadPressure,
  LoadShedder,
  type LoadShedderOptions,
  LoadShedPolicy,
  type LoadSource,
  type SampledSignals,
} from './admission/load-shedder.js';
export {
  type MapConcurrentOptions,
  type MapContext,
  type MapFn,
  mapConcurrent,
} from './admission/map-concurrent.js';
export {
  isLoadShedError,
  type LoadShedDetails,
  LoadShedError,
  type LoadSignal,
  type Priority,
} from './admission/shed-error.js';
export {
  type CircuitBreakerPolicy,
  circuitBreaker,
} from './circuit-breaker/circuit-breaker.js';
export { CircuitOpenError, isCircuitOpenError, type RefusingState } from './circuit-breaker/errors.js';
export type {
  CallTimeoutMode,
  CircuitBreakerOptions,
  CircuitSnapshot,
  CircuitState,
  FailureRateOptions,
  RejectedEvent,
  StateChangeEvent,
} from './circuit-breaker/options.js';
export {
  inferredResilient,
  type SmartResilienceOptions,
  SmartResiliencePolicy,
  smartResilience,
} from './circuit-breaker/smart.js';
export { classify, httpStatusKind, isTransient } from './core/classify.js';
export { type Clock, systemClock, type TimerHandle } from './core/clock.js';
export type { Context, Operation } from './core/context.js';
export {
  type GiveUpReason,
  isRejectedError,
  isResilienceError,
  isRetriesExhaustedError,
  isStoreUnavailableError,
  isTimeoutError,
  RejectedError,
  ResilienceError,
  type ResilienceErrorOptions,
  RetriesExhaustedError,
  StoreUnavailableError,
  TimeoutError,
} from './core/errors.js';
export { type Disposer, type Listener, setListenerErrorHandler } from './core/events.js';
export { fromHttpStatus, type Problem, toHttpStatus, toProblem } from './core/http-status.js';
export { isTransientKind, type Kind, kinds } from './core/kind.js';
export { pipeline } from './core/pipeline.js';
export type { ExecuteOptions, Policy, PolicyExtra } from './core/policy.js';
export type { Random } from './core/random.js';
export { findRetryAfter, parseRetryAfter, retryAfterOf } from './core/retry-after.js';
export { HedgeCanceledError, isHedgeCanceledError } from './hedge/errors.js';
export {
  type HedgeEvent,
  type HedgeOptions,
  type HedgePolicy,
  type HedgeTrigger,
  hedge,
} from './hedge/hedge.js';
export { isRateLimitedError, RateLimitedError } from './rate-limit/errors.js';
export type { RateLimitPolicy, RateLimitPolicyOptions } from './rate-limit/rate-limit-policy.js';
export {
  RateLimiter,
  type RateLimiterOptions,
  type RateLimitRejectedEvent,
  type RateLimitStoreErrorEvent,
  type RateLimitWaitOptions,
  type ResetReturn,
  rateLimiter,
  type StoreErrorMode,
} from './rate-limit/rate-limiter.js';
export type { RateLimitRuleOptions } from './rate-limit/rule.js';
export type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
  SyncRateLimitStore,
} from './rate-limit/store.js';
export {
  type Backoff,
  constant,
  decorrelatedJitter,
  type ExponentialOptions,
  exponential,
  exponentialJitter,
  fullJitter,
  type JitterOptions,
  linear,
} from './retry/backoff.js';
export {
  type BudgetExhaustedEvent,
  RetryBudget,
  type RetryBudgetOptions,
  retryBudget,
} from './retry/budget.js';
export {
  type FallbackHandler,
  type FallbackOptions,
  type FallbackPolicy,
  fallback,
} from './retry/fallback.js';
export {
  type GiveUpEvent,
  type RetryEvent,
  type RetryOptions,
  RetryPolicy,
  type RetryPredicate,
  retry,
  retryAll,
  retryIf,
} from './retry/retry.js';
export { type TimeoutMode, type TimeoutOptions, TimeoutPolicy, timeout } from './retry/timeout.js';
export {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  memoryRateLimitStore,
} from './stores/memory/rate-limit.js';
