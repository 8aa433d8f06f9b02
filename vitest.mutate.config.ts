import { defineConfig } from 'vitest/config';

/**
 * The tests StrykerJS runs against each mutant (`npm run mutate`): every test that imports the
 * source it mutates. Left out: tests of the built package (`dist/`, the type consumer, the docs
 * snippets, the README), the multi-process tests (their workers run `dist/`), and the tests of the
 * test infrastructure itself; none of them can see a mutant in `src/`.
 */
export default defineConfig({
  test: {
    include: [
      'src/**/*.test.ts',
      'test/policy-conformance.test.ts',
      'test/load-shedder-event-loop.test.ts',
      'test/rate-limit/redis-conformance.test.ts',
      'test/rate-limit/redis-failure.test.ts',
      'test/rate-limit/redis-batching.test.ts',
      'test/rate-limit/redis-wait.test.ts',
      'test/idempotency/redis-conformance.test.ts',
      'test/idempotency/redis-failure.test.ts',
      'test/idempotency/redis-outage.test.ts',
      'test/idempotency/http-client.test.ts',
      'test/lock/redis-*.test.ts',
      'test/cache/redis-layer.test.ts',
      'test/cache/read-through.test.ts',
      'test/postgres/*.test.ts',
      'test/saga/memory-log-conformance.test.ts',
      'test/telemetry/*.test.ts',
      'test/nats/*.test.ts',
      'test/outbox/pglite.test.ts',
      'test/outbox/broker-down.test.ts',
    ],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    sequence: { hooks: 'stack' },
  },
});
