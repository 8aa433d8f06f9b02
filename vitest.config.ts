import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    reporters: ['default', './test/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // test/support cleans up in afterEach/afterAll hooks that must run in reverse order of registration
    sequence: { hooks: 'stack' },
  },
});
