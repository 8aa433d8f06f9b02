/**
 * bulwark: resilience patterns for Node.js services. Curated named exports; see docs/ for each
 * pattern.
 */

export {
  type BulkheadPolicy,
  type BulkheadRejectedEvent,
  bulkhead,
} from './admission/bulkhead.js';
export {
  type ConcurrencyLimitPolicy,
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
  isLoadShedError,
  type LoadShedDetails,
  LoadShedError,
} from './admission/errors.js';
export type { LoadShedPolicy } from './admission/load-shed-policy.js';
export {
  type LoadPressure,
  type LoadReadings,
  type LoadShedder,
  loadShedder,
  type Release,
} from './admission/load-shedder.js';
export {
  type LoadLimits,
  type LoadShedderOptions,
  type LoadShedRejection,
  type LoadSignal,
  type LoadSource,
  type LoadThresholds,
  type Priority,
  priorities,
  type SampledSignals,
  type SampleFailedEvent,
  type ShedStateChangeEvent,
} from './admission/load-shedder-options.js';
export { type MapContext, type MapFn, mapConcurrent, mapSkip } from './admission/map-concurrent.js';
export { mapConcurrentIterable } from './admission/map-concurrent-iterable.js';
export type { MapConcurrentIterableOptions } from './admission/map-concurrent-iterable-options.js';
export type {
  BulkheadOptions,
  ConcurrencyLimitOptions,
  ConcurrencyLimitRejection,
  MapConcurrentOptions,
} from './admission/options.js';
export { type LoadContext, type ReadThroughCache, readThroughCache } from './cache/cache.js';
export { type MemoryLayerOptions, memoryLayer } from './cache/memory-store.js';
export {
  type CacheGetOptions,
  type CacheSerializer,
  type CacheSetOptions,
  jsonSerializer,
  type LayerErrorEvent,
  type ReadThroughCacheOptions,
} from './cache/options.js';
export type {
  CacheLayer,
  LocalCacheEntry,
  LocalCacheLayer,
  RemoteCacheEntry,
  RemoteCacheLayer,
} from './cache/store.js';
export {
  type CircuitBreakerPolicy,
  circuitBreaker,
} from './circuit-breaker/circuit-breaker.js';
export { CircuitOpenError, isCircuitOpenError, type RefusingState } from './circuit-breaker/errors.js';
export type {
  CallTimeoutMode,
  CircuitBreakerOptions,
  CircuitRejectedEvent,
  CircuitSnapshot,
  CircuitState,
  FailureRateOptions,
  StateChangeEvent,
} from './circuit-breaker/options.js';
export {
  inferredResilient,
  type SmartResilienceOptions,
  type SmartResiliencePolicy,
  smartResilience,
} from './circuit-breaker/smart.js';
export type { CircuitStats, LatencyPercentiles } from './circuit-breaker/stats.js';
export type { CircuitWindow } from './circuit-breaker/window-options.js';
export { classify, isTransient } from './core/classify.js';
export { type Clock, systemClock, type TimerHandle } from './core/clock.js';
export type { Context, Operation } from './core/context.js';
export {
  isRejectedError,
  isResilienceError,
  isStoreUnavailableError,
  isTimeoutError,
  RejectedError,
  ResilienceError,
  type ResilienceErrorOptions,
  StoreUnavailableError,
  TimeoutError,
} from './core/errors.js';
export { type Disposer, type Listener, setListenerErrorHandler } from './core/events.js';
export { fromHttpStatus, type Problem, toHttpStatus, toProblem } from './core/http-status.js';
export { isTransientKind, type Kind, kinds } from './core/kind.js';
export { type PipelineOptions, pipeline } from './core/pipeline.js';
export type { ExecuteOptions, Policy, PolicyExtra } from './core/policy.js';
export type {
  FailureEvent,
  PolicyEvents,
  PolicyOptions,
  RejectedEvent,
  SuccessEvent,
} from './core/policy-events.js';
export type { Random } from './core/random.js';
export { parseRetryAfter, retryAfterOf } from './core/retry-after.js';
export { type TelemetryOptions, telemetryOptions } from './core/telemetry.js';
export { HedgeCanceledError, isHedgeCanceledError } from './hedge/errors.js';
export {
  type HedgeEvent,
  type HedgePolicy,
  type HedgeTrigger,
  hedge,
} from './hedge/hedge.js';
export type { HedgeOptions } from './hedge/options.js';
export {
  IdempotencyConflictError,
  IdempotencyInProgressError,
  isIdempotencyConflictError,
  isIdempotencyInProgressError,
  isLeaseLostError,
  isStoredFailureError,
  LeaseLostError,
  type StoredFailure,
  StoredFailureError,
} from './idempotency/errors.js';
export type { IdempotentHandler, IdempotentHandlerContext } from './idempotency/handler.js';
export {
  fingerprintOf,
  type Idempotency,
  type IdempotentCallOptions,
  type IdempotentOutcome,
  idempotency,
} from './idempotency/idempotency.js';
export {
  idempotencyKey,
  type KeyedContext,
  type KeyedExecuteOptions,
  type KeyedPolicy,
  withIdempotencyKey,
} from './idempotency/key.js';
export {
  type MemoryIdempotencyStore,
  type MemoryIdempotencyStoreOptions,
  memoryIdempotencyStore,
} from './idempotency/memory-store.js';
export type {
  ConflictEvent,
  IdempotencyOptions,
  IdempotencyStoreErrorEvent,
  LeaseLostEvent,
  ReplayEvent,
} from './idempotency/options.js';
export type { ClaimResult, IdempotencyStore } from './idempotency/store.js';
export { type KeyedPolicies, keyed } from './keyed/keyed.js';
export type {
  KeyedOptions,
  KeyedOverflowEvent,
  KeyedRemovalReason,
  KeyedRemovedEvent,
} from './keyed/options.js';
export {
  isLockLostError,
  isLockNotAcquiredError,
  isStaleFenceError,
  LockLostError,
  LockNotAcquiredError,
  StaleFenceError,
} from './lock/errors.js';
export type { LockContext, MultiLockContext } from './lock/held.js';
export { type DistributedLock, distributedLock } from './lock/lock.js';
export {
  type MemoryFenceStore,
  type MemoryLockStore,
  type MemoryLockStoreOptions,
  memoryFenceStore,
  memoryLockStore,
} from './lock/memory-store.js';
export type {
  DistributedLockOptions,
  LockAcquiredEvent,
  LockLostEvent,
  LockReleaseFailedEvent,
  WithLockOptions,
} from './lock/options.js';
export type { AcquiredLease, FenceStore, LockStore } from './lock/store.js';
export {
  isOptimisticConflictError,
  isOptimisticNotFoundError,
  OptimisticConflictError,
  OptimisticNotFoundError,
} from './optimistic/errors.js';
export { type OptimisticUpdate, optimisticUpdate } from './optimistic/optimistic-update.js';
export type {
  OptimisticConflictEvent,
  OptimisticContext,
  OptimisticGiveUpEvent,
  OptimisticLoad,
  OptimisticMutate,
  OptimisticMutateContext,
  OptimisticSave,
  OptimisticUpdateCallOptions,
  OptimisticUpdateOptions,
  Versioned,
} from './optimistic/options.js';
export { isOutboxPublishError, OutboxPublishError } from './outbox/errors.js';
export { type MemoryOutbox, type MemoryOutboxOptions, memoryOutbox } from './outbox/memory-store.js';
export type {
  DeadLetteredEvent,
  DeliveredEvent,
  OutboxRelayOptions,
  OutboxStoreErrorEvent,
  PublishFailedEvent,
} from './outbox/options.js';
export { type OutboxRelay, outboxRelay } from './outbox/outbox-relay.js';
export type {
  FailedDelivery,
  OutboxDeadLetter,
  OutboxEvent,
  OutboxMessage,
  OutboxStore,
  Publish,
} from './outbox/store.js';
export type { CombinedRateLimiter } from './rate-limit/combined.js';
export type { BindingLimit, CombinedRateLimitResult } from './rate-limit/combined-result.js';
export { isRateLimitedError, RateLimitedError, type RateLimitRejection } from './rate-limit/errors.js';
export type { RateLimitRejectedEvent, RateLimitStoreErrorEvent } from './rate-limit/events.js';
export {
  type MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  memoryRateLimitStore,
} from './rate-limit/memory-store.js';
export type { RateLimiterOptions, RateLimitWaitOptions, StoreFailureMode } from './rate-limit/options.js';
export type { RateLimitPolicy, RateLimitPolicyOptions } from './rate-limit/rate-limit-policy.js';
export { type RateLimiter, rateLimiter } from './rate-limit/rate-limiter.js';
export type { RateLimitRuleOptions } from './rate-limit/rule.js';
export type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from './rate-limit/store.js';
export {
  type AttemptFailure,
  type Backoff,
  type BackoffContext,
  constant,
  decorrelatedJitter,
  delays,
  type ExponentialOptions,
  exponential,
  exponentialJitter,
  fullJitter,
  type JitterOptions,
  linear,
  type RetryBackoff,
} from './retry/backoff.js';
export {
  type BudgetExhaustedEvent,
  type RetryBudget,
  type RetryBudgetOptions,
  retryBudget,
} from './retry/budget.js';
export { type GiveUpReason, isRetriesExhaustedError, RetriesExhaustedError } from './retry/errors.js';
export {
  type FallbackHandler,
  type FallbackOptions,
  type FallbackPolicy,
  fallback,
} from './retry/fallback.js';
export type {
  DeclineReason,
  GiveUpEvent,
  ResultPredicate,
  RetryEvent,
  RetryOptions,
  RetryPredicate,
} from './retry/options.js';
export { type RetryPolicy, retry, retryAll, retryIf } from './retry/retry.js';
export {
  type CompensationFailure,
  DuplicateSagaError,
  isDuplicateSagaError,
  isSagaFailedError,
  isSagaLeaseLostError,
  SagaFailedError,
  SagaLeaseLostError,
} from './saga/errors.js';
export { type MemorySagaLog, type MemorySagaLogOptions, memorySagaLog } from './saga/memory-store.js';
export type {
  CompensatedEvent,
  CompensationContext,
  CompensationFailedEvent,
  RecoverOptions,
  SagaOptions,
  SagaRunOptions,
  StepContext,
  StepDefinition,
  StepFailedEvent,
} from './saga/options.js';
export type { AttentionReason, RecoverResult, SagaAttention } from './saga/recover.js';
export type { SagaResult } from './saga/run.js';
export { type Saga, saga } from './saga/saga.js';
export {
  type ClaimedRun,
  type LoggedStep,
  SAGA_RETENTION_MS,
  type SagaChange,
  type SagaLease,
  type SagaLog,
  type SagaStatus,
  type StatusChange,
  type StepChange,
  type StepState,
} from './saga/store.js';
export { Coalescer } from './sharing/coalescer.js';
export { type Deduped, dedup } from './sharing/dedup.js';
export type {
  CancelledEvent,
  CoalescerOptions,
  DedupOptions,
  SharedCallOptions,
  SharedEvent,
} from './sharing/options.js';
export type { SharedCallContext } from './sharing/shared-calls.js';
export type { TimeoutMode, TimeoutOptions } from './timeout/options.js';
export { type TimeoutPolicy, timeout } from './timeout/timeout.js';
export { InvalidTransitionError, isInvalidTransitionError } from './transition/errors.js';
export type { TransitionGuardOptions, TransitionMap } from './transition/options.js';
export { type GuardedEntity, type TransitionGuard, transitionGuard } from './transition/transition-guard.js';
