/**
 * The bulwark lab (`npm start`): a payments API built twice, with bulwark and naively, under the
 * same chaotic, seeded load. Plain `npm start` runs on embedded stores only (no Redis, PostgreSQL
 * or NATS needed, whatever REDIS_URL, DATABASE_URL or NATS_URL say); `--workers N` runs each build
 * in N processes on the real services at those URLs (defaults on localhost) and fails at once if
 * one does not answer. Prints a progress bar while it runs (on a terminal) and the two builds side
 * by side at the end; exits 1 if an invariant of the bulwark build failed.
 *
 *   npm start                          # about a minute
 *   npm start -- --duration 10         # seconds of load per build
 *   npm start -- --seed 7
 *   npm start -- --workers 4           # 4 processes per build on Redis, PostgreSQL and NATS
 *   npm start -- --report out.html     # where the charts go (default lab-report.html)
 */
import { parseArgs } from 'node:util';
import { progressBar } from './progress.js';
import { writeHtmlReport } from './report/index.js';
import { runLab } from './scenario.js';
import { checkServices, serviceUrls } from './services.js';
import { renderReport } from './table.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '25' },
    seed: { type: 'string', default: '1' },
    workers: { type: 'string', default: '0' },
    report: { type: 'string', default: 'lab-report.html' },
  },
});
const durationS = Number(values.duration);
const seed = Number(values.seed);
const workers = Number(values.workers);
if (
  !(durationS > 0) ||
  !Number.isInteger(seed) ||
  !Number.isInteger(workers) ||
  workers < 0 ||
  workers > 32
) {
  console.error(
    'usage: npm start -- [--duration <seconds of load per build>] [--seed <integer>] [--workers <0-32>] [--report <path of the HTML report>]',
  );
  process.exit(2);
}
const services = workers > 0 ? serviceUrls(process.env) : undefined;
if (services !== undefined) {
  try {
    await checkServices(services);
  } catch (error) {
    console.error(`bulwark lab: ${(error as Error).message}`);
    process.exit(2);
  }
}

const progress = progressBar(process.stdout.isTTY === true);
const where =
  services === undefined
    ? 'embedded stores'
    : `${workers} workers per build on ${services.redis}, ${services.postgres}, ${services.nats}`;
console.log(
  `bulwark lab: ${durationS} s of load per build, seed ${seed}, ${where}; phases: warm-up, latency spikes, outage, noisy tenant, recovery`,
);
const started = performance.now();
try {
  const runs = await runLab({
    durationMs: durationS * 1_000,
    seed,
    workers,
    ...(services === undefined ? {} : { services }),
    onLoad: (build, recorder, timeline) => progress.load(build, recorder, timeline),
    onSettle: (build) => progress.settle(build),
  });
  progress.stop();
  const { text, ok } = renderReport(runs, { workers });
  await writeHtmlReport(values.report, runs, { seed, durationMs: durationS * 1_000, workers });
  console.log(
    `\n${text}\n\nfinished in ${((performance.now() - started) / 1_000).toFixed(1)} s; charts in ${values.report}`,
  );
  process.exitCode = ok ? 0 : 1;
} catch (error) {
  progress.stop();
  console.error(error);
  process.exitCode = 1;
}
