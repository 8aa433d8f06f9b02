/**
 * `npm run mutate:check -- <source file>[,<source file>…] <test file>…`: StrykerJS on the given
 * source files (globs and `!` exclusions allowed) against only the named test files (globs too), without touching the committed incremental report: the quick loop for
 * killing one file's survivors (seconds, not the whole suite's dry run). Prints the survivors
 * with their line and replacement; exits non-zero when any survive.
 */
import { basename } from 'node:path';
import { usePrivateRedis } from './private-redis.js';
import { runTargeted } from './targeted.js';

await usePrivateRedis();

const [source, ...tests] = process.argv.slice(2);
if (source === undefined || tests.length === 0) {
  console.error('usage: npm run mutate:check -- <source file> <test file>...');
  process.exit(2);
}
const id = `${basename(source.split(',')[0]!, '.ts').replace(/[^\w-]/g, '')}-${process.pid}`;
const report = runTargeted({ id, mutate: source.split(','), tests, concurrency: 1, timeoutMS: 10_000 });
if (report === undefined) throw new Error('stryker failed');
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
