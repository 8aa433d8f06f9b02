/**
 * `npm run mutate:score`: the mutation score per folder of `src/`, read from the committed
 * incremental report, as the markdown table MUTATION.md holds. Score = (killed + timed out) ÷
 * (killed + timed out + survived + not covered); mutants marked equivalent in the source
 * (`// Stryker disable …: <why>`) are counted apart and not in the score, and so are static mutants
 * `npm run mutate:static` has not run yet; those it ran (against their folder's tests) are counted.
 */
import { readFileSync } from 'node:fs';

interface Mutant {
  readonly status: string;
  readonly statusReason?: string;
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly location: { readonly start: { readonly line: number } };
}
interface Report {
  readonly files: Record<string, { readonly mutants: readonly Mutant[] }>;
}

interface Tally {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  staticRun: number;
  staticLeft: number;
  errors: number;
}

/** How Stryker marks a static mutant `npm run mutate` left for `npm run mutate:static`. */
const STATIC_REASON = 'Static mutant (and "ignoreStatic" was enabled)';
const empty: Tally = {
  killed: 0,
  timeout: 0,
  survived: 0,
  noCoverage: 0,
  ignored: 0,
  staticRun: 0,
  staticLeft: 0,
  errors: 0,
};

const report = JSON.parse(readFileSync('mutation/stryker-incremental.json', 'utf8')) as Report;
const byFolder = new Map<string, Tally>();
const survivors: string[] = [];

function folderOf(file: string): string {
  const parts = file.replace(/\\/g, '/').split('/');
  // src/<folder>/… and src/stores/<backend>/…
  return parts[1] === 'stores' ? parts.slice(0, 3).join('/') : parts.slice(0, 2).join('/');
}

for (const [file, { mutants }] of Object.entries(report.files)) {
  const folder = folderOf(file);
  let tally = byFolder.get(folder);
  if (tally === undefined) {
    tally = { ...empty };
    byFolder.set(folder, tally);
  }
  for (const mutant of mutants) {
    if (mutant.statusReason?.startsWith('static: ')) tally.staticRun++;
    switch (mutant.status) {
      case 'Killed':
        tally.killed++;
        break;
      case 'Timeout':
        tally.timeout++;
        break;
      case 'Survived':
        tally.survived++;
        survivors.push(
          `${file}:${mutant.location.start.line} ${mutant.mutatorName} → ${mutant.replacement ?? ''}`,
        );
        break;
      case 'NoCoverage':
        tally.noCoverage++;
        survivors.push(`${file}:${mutant.location.start.line} ${mutant.mutatorName} (no coverage)`);
        break;
      case 'Ignored':
        if (mutant.statusReason === STATIC_REASON) tally.staticLeft++;
        else tally.ignored++;
        break;
      default:
        tally.errors++;
    }
  }
}

const score = (t: Tally) => {
  const detected = t.killed + t.timeout;
  const valid = detected + t.survived + t.noCoverage;
  return valid === 0 ? '—' : `${((100 * detected) / valid).toFixed(1)} %`;
};
const total: Tally = { ...empty };
const rows = [...byFolder.entries()].sort(([a], [b]) => a.localeCompare(b));
console.log(
  '| folder | score | killed | timed out | survived | no coverage | marked equivalent | of them static, folder tests | static, not yet run |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const row = (name: string, t: Tally) =>
  `| ${name} | ${score(t)} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} | ${t.ignored} | ${t.staticRun} | ${t.staticLeft} |`;
for (const [folder, t] of rows) {
  for (const key of Object.keys(total) as (keyof Tally)[]) total[key] += t[key];
  console.log(row(folder, t));
}
console.log(row('all', total));
if (process.argv.includes('--survivors')) for (const line of survivors.sort()) console.log(line);
