/**
 * `npm run mutate:check -- <source file>[,<source file>…] <test file>…`: StrykerJS on the given
 * source files (globs and `!` exclusions allowed) against only the named test files (globs too), without touching the committed incremental report: the quick loop for
 * killing one file's survivors (seconds, not the whole suite's dry run). Prints the survivors
 * with their line and replacement; exits non-zero when any survive.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

const [source, ...tests] = process.argv.slice(2);
if (source === undefined || tests.length === 0) {
  console.error('usage: npm run mutate:check -- <source file> <test file>...');
  process.exit(2);
}
const id = `${basename(source.split(',')[0]!, '.ts').replace(/[^\w-]/g, '')}-${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'bulwark-mutate-'));
const vitestConfig = `vitest.check-${id}.config.ts`;
const strykerConfig = join(work, 'stryker.config.json');
const reportFile = join(work, 'report.json');
writeFileSync(
  vitestConfig,
  `import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { include: ${JSON.stringify(tests)}, testTimeout: 20_000, hookTimeout: 20_000, sequence: { hooks: 'stack' } } });
`,
);
writeFileSync(
  strykerConfig,
  JSON.stringify({
    testRunner: 'vitest',
    vitest: { configFile: vitestConfig, related: false },
    coverageAnalysis: 'perTest',
    mutate: source.split(','),
    reporters: ['json'],
    jsonReporter: { fileName: reportFile },
    concurrency: 1,
    timeoutMS: 10_000,
    tempDirName: `.stryker-tmp/check-${id}`,
    // Other checks' sandboxes and configs come and go while this one copies the project.
    ignorePatterns: ['/.stryker-tmp', '/vitest.check-*.config.ts', `!/${vitestConfig}`],
    cleanTempDir: 'always',
    logLevel: 'warn',
  }),
);
try {
  const run = spawnSync('npx', ['stryker', 'run', strykerConfig], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`stryker exited with ${run.status}`);
  interface Mutant {
    status: string;
    mutatorName: string;
    replacement?: string;
    location: { start: { line: number; column: number } };
  }
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
    files: Record<string, { mutants: Mutant[] }>;
  };
  let survived = 0;
  let total = 0;
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const m of mutants) {
      if (m.status === 'Ignored') continue;
      total++;
      if (m.status === 'Survived' || m.status === 'NoCoverage') {
        survived++;
        const where = `${file}:${m.location.start.line}:${m.location.start.column}`;
        console.log(`${where} ${m.status} ${m.mutatorName} → ${JSON.stringify(m.replacement ?? '')}`);
      }
    }
  }
  console.log(`${total - survived} of ${total} mutants killed, ${survived} survived`);
  process.exitCode = survived === 0 ? 0 : 1;
} finally {
  rmSync(vitestConfig, { force: true });
  rmSync(work, { recursive: true, force: true });
}
