/**
 * The bulwark lab (`npm start`): a payments API built twice, with bulwark and naively, under the
 * same chaotic, seeded load, on embedded stores only (no Redis, PostgreSQL or NATS needed). Prints
 * a progress bar while it runs (on a terminal) and the two builds side by side at the end; exits 1
 * if an invariant of the bulwark build failed.
 *
 *   npm start                          # about a minute
 *   npm start -- --duration 10         # seconds of load per build
 *   npm start -- --seed 7
 */
import { parseArgs } from 'node:util';
import { progressBar } from './progress.js';
import { runLab } from './scenario.js';
import { renderReport } from './table.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '25' },
    seed: { type: 'string', default: '1' },
  },
});
const durationS = Number(values.duration);
const seed = Number(values.seed);
if (!(durationS > 0) || !Number.isInteger(seed)) {
  console.error('usage: npm start -- [--duration <seconds of load per build>] [--seed <integer>]');
  process.exit(2);
}

const progress = progressBar(process.stdout.isTTY === true);
console.log(
  `bulwark lab: ${durationS} s of load per build, seed ${seed}; phases: warm-up, latency spikes, outage, noisy tenant, recovery`,
);
const started = performance.now();
try {
  const runs = await runLab({
    durationMs: durationS * 1_000,
    seed,
    onLoad: (build, recorder, timeline) => progress.load(build, recorder, timeline),
    onSettle: (build) => progress.settle(build),
  });
  progress.stop();
  const { text, ok } = renderReport(runs);
  console.log(`\n${text}\n\nfinished in ${((performance.now() - started) / 1_000).toFixed(1)} s`);
  process.exitCode = ok ? 0 : 1;
} catch (error) {
  progress.stop();
  console.error(error);
  process.exitCode = 1;
}
