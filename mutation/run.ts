/**
 * `npm run mutate`: StrykerJS over every file `stryker.config.json` names, in incremental mode, so
 * a re-run tests only the mutants whose code or covering tests changed since the committed
 * `mutation/stryker-incremental.json`.
 *
 * `npm run mutate -- --mutate <files>` tests just those files (for one change) and merges their
 * results into the committed file, so the other files' results are kept rather than dropped
 * (Stryker itself writes only the files of the run at hand).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { usePrivateRedis } from './private-redis.js';

await usePrivateRedis();

const committed = 'mutation/stryker-incremental.json';
const partialFile = 'mutation/.partial-incremental.json';

interface Report {
  files: Record<string, unknown>;
  testFiles?: Record<string, unknown>;
  [field: string]: unknown;
}

function stryker(args: readonly string[]): number {
  const run = spawnSync('npx', ['stryker', 'run', ...args], { stdio: 'inherit' });
  return run.status ?? 1;
}

function readReport(path: string): Report {
  return JSON.parse(readFileSync(path, 'utf8')) as Report;
}

/** The committed report with the partial run's files (and the tests it saw) in place of theirs. */
function merge(base: Report, partial: Report): Report {
  return {
    ...base,
    files: { ...base.files, ...partial.files },
    testFiles: { ...base.testFiles, ...partial.testFiles },
  };
}

const args = process.argv.slice(2);
const partial = args.some((arg) => arg === '--mutate' || arg.startsWith('--mutate=') || arg === '-m');
if (!partial) process.exit(stryker(args));

if (existsSync(committed)) copyFileSync(committed, partialFile);
const status = stryker([...args, '--incrementalFile', partialFile]);
if (existsSync(partialFile)) {
  const merged = existsSync(committed)
    ? merge(readReport(committed), readReport(partialFile))
    : readReport(partialFile);
  writeFileSync(committed, JSON.stringify(merged));
  rmSync(partialFile);
}
process.exit(status);
