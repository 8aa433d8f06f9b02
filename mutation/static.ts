/**
 * `npm run mutate:static`: the second half of a full run. `npm run mutate` leaves out **static**
 * mutants (code that runs once, when a module loads: the tables of classify.ts, option
 * declarations, Lua sources): Stryker cannot switch them on per test, so each one would need the
 * whole suite (about 25 s), some 1,500 of them, hours on 2 cores. Here each static mutant the
 * committed report holds as ignored runs against the tests of its own folder instead
 * (`src/<folder>/**\/*.test.ts`; for the Redis stores also `test/{rate-limit,idempotency,lock}/redis-*.test.ts`,
 * for the PostgreSQL stores `test/postgres/*.test.ts`, for the NATS stores `test/nats/*.test.ts`), and
 * its result replaces the "ignored" in the committed report, its reason saying which tests ran.
 * So does every survivor: one that runs both at load and in tests ("hybrid") was switched on by
 * the main run only for the tests that reach it at run time, after the module had loaded
 * unmutated (the report does not keep which survivors those are).
 * A folder's tests are fewer than the suite, so a kill here is a kill, and a survivor here is at
 * worst a survivor of the full suite: the score is a lower bound.
 *
 * `npm run mutate:static -- src/core` limits it to the folders named; `-- src/stores/postgres/outbox-sql.ts`
 * to the files named (each still against its folder's tests).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { usePrivateRedis } from './private-redis.js';
import { type Mutant, type Report, runTargeted } from './targeted.js';

await usePrivateRedis();

const committed = 'mutation/stryker-incremental.json';
const STATIC_REASON = 'Static mutant (and "ignoreStatic" was enabled)';

/** The folder a source file's static mutants are tested with, and that folder's tests. */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts[1] === 'stores' ? parts.slice(0, 3).join('/') : parts.slice(0, 2).join('/');
}
function testsOf(folder: string): string[] {
  const tests = [`${folder}/**/*.test.ts`];
  if (folder === 'src/stores/redis')
    tests.push(
      'test/rate-limit/redis-*.test.ts',
      'test/idempotency/redis-*.test.ts',
      'test/lock/redis-*.test.ts',
    );
  if (folder === 'src/stores/postgres') tests.push('test/postgres/*.test.ts');
  if (folder === 'src/stores/nats') tests.push('test/nats/*.test.ts');
  return tests;
}
const identity = (m: Mutant) =>
  `${m.location.start.line}:${m.location.start.column}-${m.location.end.line}:${m.location.end.column} ${m.mutatorName} ${m.replacement ?? ''}`;

const report = JSON.parse(readFileSync(committed, 'utf8')) as Report;
const only = process.argv.slice(2);
const onlyFolders = only.filter((arg) => !arg.endsWith('.ts'));
const onlyFiles = only.filter((arg) => arg.endsWith('.ts'));
const byFolder = new Map<string, Map<string, Mutant[]>>();
for (const [file, { mutants }] of Object.entries(report.files)) {
  const folder = folderOf(file);
  if (only.length > 0 && !onlyFolders.includes(folder) && !onlyFiles.includes(file)) continue;
  const statics = mutants.filter(
    (m) =>
      (m.status === 'Ignored' && m.statusReason === STATIC_REASON) ||
      m.status === 'Survived' ||
      m.status === 'NoCoverage',
  );
  if (statics.length === 0) continue;
  let files = byFolder.get(folder);
  if (files === undefined) {
    files = new Map();
    byFolder.set(folder, files);
  }
  files.set(file, statics);
}

let failed = false;
for (const [folder, files] of byFolder) {
  const tests = testsOf(folder);
  // Whole lines: a range may take in a runtime mutant too; only the static ones are merged back.
  const ranges = [...files].flatMap(([file, statics]) => [
    ...new Set(statics.map((m) => `${file}:${m.location.start.line}-${m.location.end.line}`)),
  ]);
  const count = [...files.values()].reduce((n, statics) => n + statics.length, 0);
  console.log(`${folder}: ${count} static mutants against ${tests.join(', ')}`);
  const id = `static-${folder.replace(/\W/g, '-')}`;
  const results = runTargeted({
    id,
    mutate: ranges,
    tests,
    concurrency: 4,
    timeoutMS: 3_000,
    progress: true,
  });
  if (results === undefined) {
    failed = true;
    continue;
  }
  for (const [file, statics] of files) {
    const found = new Map((results.files[file]?.mutants ?? []).map((m) => [identity(m), m]));
    for (const mutant of statics) {
      const result = found.get(identity(mutant));
      if (result === undefined) continue;
      mutant.status = result.status;
      mutant.statusReason = `static: run against ${tests.join(', ')}`;
      mutant.killedBy = result.killedBy ?? [];
      mutant.coveredBy = result.coveredBy ?? [];
      if (result.testsCompleted !== undefined) mutant.testsCompleted = result.testsCompleted;
    }
  }
  writeFileSync(committed, JSON.stringify(report));
}
process.exitCode = failed ? 1 : 0;
