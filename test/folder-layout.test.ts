/**
 * Every pattern folder has the same file roles: `<pattern>.ts`, `options.ts` (its declared
 * options), `errors.ts` (its refusals). One concept lives in one folder, and no source file that
 * does more than one job grows past ~300 lines.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = join(import.meta.dirname, '..', 'src');
const read = (path: string): string => readFileSync(join(src, path), 'utf8');

/** Every pattern folder: the rules below hold in each. */
const patternFolders = [
  'retry',
  'timeout',
  'circuit-breaker',
  'hedge',
  'admission',
  'node',
  'idempotency',
  'lock',
  'sharing',
  'cache',
  'saga',
  'transition',
  'optimistic',
  'outbox',
  'keyed',
];

describe('folder layout', () => {
  it.each([
    ['retry', ['retry.ts', 'options.ts', 'errors.ts', 'budget.ts', 'backoff.ts']],
    ['timeout', ['timeout.ts', 'options.ts']],
    ['circuit-breaker', ['circuit-breaker.ts', 'options.ts', 'errors.ts']],
    ['hedge', ['hedge.ts', 'options.ts', 'errors.ts']],
    ['admission', ['bulkhead.ts', 'concurrency-limit.ts', 'load-shedder.ts', 'options.ts', 'errors.ts']],
    ['node', ['load-shedder.ts', 'process-signals.ts', 'index.ts']],
    ['idempotency', ['idempotency.ts', 'options.ts', 'errors.ts', 'store.ts', 'memory-store.ts']],
    ['lock', ['lock.ts', 'options.ts', 'errors.ts', 'store.ts', 'memory-store.ts']],
    ['sharing', ['coalescer.ts', 'dedup.ts', 'options.ts']],
    ['cache', ['cache.ts', 'options.ts', 'store.ts', 'memory-store.ts']],
    ['saga', ['saga.ts', 'options.ts', 'errors.ts', 'store.ts', 'memory-store.ts']],
    ['transition', ['transition-guard.ts', 'options.ts', 'errors.ts', 'snapshot.ts']],
    ['optimistic', ['optimistic-update.ts', 'options.ts', 'errors.ts']],
    ['outbox', ['outbox-relay.ts', 'options.ts', 'errors.ts', 'store.ts', 'memory-store.ts']],
    ['keyed', ['keyed.ts', 'options.ts', 'registry.ts']],
  ])('%s/ holds its roles', (folder, files) => {
    for (const file of files) expect(existsSync(join(src, folder, file)), `${folder}/${file}`).toBe(true);
  });

  it('keeps the load shedder in admission/ (no shed-error.ts beside errors.ts) and its node factory out of node/index.ts', () => {
    expect(existsSync(join(src, 'admission', 'shed-error.ts'))).toBe(false);
    expect(read('admission/errors.ts')).toContain('class LoadShedError');
    expect(read('node/index.ts')).not.toMatch(/function |class /);
  });

  it("keeps retry's errors in retry/errors.ts and timeout out of retry/", () => {
    expect(read('retry/errors.ts')).toContain('class RetriesExhaustedError');
    expect(read('core/errors.ts')).not.toContain('RetriesExhaustedError');
    expect(existsSync(join(src, 'retry', 'timeout.ts'))).toBe(false);
  });

  it('defines each set of kinds once, in core/kind.ts', () => {
    for (const folder of ['circuit-breaker', 'hedge', 'retry', 'core']) {
      for (const file of readdirSync(join(src, folder))) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts') || file === 'kind.ts') continue;
        expect(read(join(folder, file)), `${folder}/${file}`).not.toMatch(
          /new Set(<Kind>)?\(\[\s*'(transient|invalid)'/,
        );
      }
    }
  });

  it('reads options through readOptions only, in the pattern folders', () => {
    for (const folder of patternFolders) {
      for (const file of readdirSync(join(src, folder))) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
        expect(read(join(folder, file)), `${folder}/${file}`).not.toMatch(
          /\b(optionsObject|optionKeys|isClock)\(/,
        );
      }
    }
  });

  // One job however long: the concurrent map's run (pulling, starting, settling, closing), and the
  // breaker's state machine.
  const singleJob = new Set(['admission/map-concurrent.ts', 'circuit-breaker/circuit-breaker.ts']);

  it('has no source file over 320 lines doing several jobs in any pattern folder', () => {
    for (const folder of patternFolders) {
      for (const file of readdirSync(join(src, folder))) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts') || singleJob.has(`${folder}/${file}`))
          continue;
        const lines = read(join(folder, file)).split('\n').length;
        expect(lines, `${folder}/${file}`).toBeLessThanOrEqual(320);
      }
    }
  });
});
