/**
 * One StrykerJS run on chosen sources against chosen test files only, in a sandbox of its own, for
 * `mutate:check` and `mutate:static`: it writes a temporary vitest config naming the tests and a
 * Stryker config beside it, runs Stryker, and returns its JSON report (undefined when Stryker
 * failed), removing both configs whatever happens.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A place in a source file, as Stryker's reports give it. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** A mutant as Stryker's JSON and incremental reports hold it. */
export interface Mutant {
  status: string;
  statusReason?: string;
  killedBy?: string[];
  coveredBy?: string[];
  testsCompleted?: number;
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly location: { readonly start: Position; readonly end: Position };
}

/** Stryker's JSON (and incremental) report: the mutants of each source file. */
export interface Report {
  files: Record<string, { mutants: Mutant[] }>;
  [field: string]: unknown;
}

/** What one targeted run mutates, against which tests, how wide and how patient. */
export interface TargetedRun {
  /** Names the sandbox and the temporary vitest config (letters, digits and dashes). */
  readonly id: string;
  /** Stryker `mutate` patterns: globs, `!` exclusions and `file:line-line` ranges. */
  readonly mutate: readonly string[];
  /** The test files (globs too) that run against each mutant. */
  readonly tests: readonly string[];
  readonly concurrency: number;
  readonly timeoutMS: number;
  /** Also print Stryker's progress. */
  readonly progress?: boolean;
}

/**
 * Runs StrykerJS as {@link TargetedRun} says and returns its report, or undefined when Stryker
 * exits with an error (its output is on the console). Leaves no config or sandbox behind.
 */
export function runTargeted(run: TargetedRun): Report | undefined {
  const work = mkdtempSync(join(tmpdir(), 'bulwark-mutate-'));
  const vitestConfig = `vitest.check-${run.id}.config.ts`;
  const strykerConfig = join(work, 'stryker.config.json');
  const reportFile = join(work, 'report.json');
  writeFileSync(
    vitestConfig,
    `import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { include: ${JSON.stringify(run.tests)}, testTimeout: 20_000, hookTimeout: 20_000, sequence: { hooks: 'stack' } } });
`,
  );
  writeFileSync(
    strykerConfig,
    JSON.stringify({
      testRunner: 'vitest',
      vitest: { configFile: vitestConfig, related: false },
      coverageAnalysis: 'perTest',
      mutate: run.mutate,
      reporters: run.progress === true ? ['json', 'progress'] : ['json'],
      jsonReporter: { fileName: reportFile },
      concurrency: run.concurrency,
      timeoutMS: run.timeoutMS,
      tempDirName: `.stryker-tmp/check-${run.id}`,
      // Other runs' sandboxes and configs come and go while this one copies the project.
      ignorePatterns: ['/.stryker-tmp', '/vitest.check-*.config.ts', `!/${vitestConfig}`],
      cleanTempDir: 'always',
      logLevel: 'warn',
    }),
  );
  try {
    const stryker = spawnSync('npx', ['stryker', 'run', strykerConfig], { stdio: 'inherit' });
    if (stryker.status !== 0) return undefined;
    return JSON.parse(readFileSync(reportFile, 'utf8')) as Report;
  } finally {
    rmSync(vitestConfig, { force: true });
    rmSync(work, { recursive: true, force: true });
  }
}
