/**
 * `npm run mutate:score`: the mutation score per folder of `src/`, read from the committed
 * incremental report, as the markdown table MUTATION.md holds. Score = (killed + timed out) ÷
 * (killed + timed out + survived + not covered); mutants marked equivalent in the source
 * (`// Stryker disable …: <why>`) are counted apart and not in the score.
 */
import { readFileSync } from 'node:fs';

interface Mutant {
  readonly status: string;
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
  errors: number;
}

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
    tally = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 };
    byFolder.set(folder, tally);
  }
  for (const mutant of mutants) {
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
        tally.ignored++;
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
const total: Tally = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 };
const rows = [...byFolder.entries()].sort(([a], [b]) => a.localeCompare(b));
console.log('| folder | score | killed | timed out | survived | no coverage | marked equivalent |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const [folder, t] of rows) {
  for (const key of Object.keys(total) as (keyof Tally)[]) total[key] += t[key];
  console.log(
    `| ${folder} | ${score(t)} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} | ${t.ignored} |`,
  );
}
console.log(
  `| all | ${score(total)} | ${total.killed} | ${total.timeout} | ${total.survived} | ${total.noCoverage} | ${total.ignored} |`,
);
if (process.argv.includes('--survivors')) for (const line of survivors.sort()) console.log(line);
