/** The final table: both builds side by side, and the protected build's invariants. */
import { type BuildRun, check, type Findings, invariants } from './checks.js';
import { percentile } from './load/stats.js';

type Row = readonly [label: string, cell: (run: BuildRun, findings: Findings) => string];

const int = (value: number) => value.toLocaleString('en-US');
const ms = (value: number) => (Number.isNaN(value) ? '-' : `${int(Math.round(value))} ms`);

const rows: readonly Row[] = [
  ['HTTP requests (all attempts)', ({ load }) => int(load.requests)],
  ['operations succeeded / total', ({ load }) => `${int(load.succeeded)} / ${int(load.operations)}`],
  ['2xx', ({ load }) => int(load.ok)],
  ['4xx (not 429)', ({ load }) => int(load.clientErrors)],
  ['429 rate limited', ({ load }) => int(load.tooManyRequests)],
  ['503', ({ load }) => int(load.unavailable)],
  ['other 5xx', ({ load }) => int(load.serverErrors)],
  ['no answer (client timeout, abort)', ({ load }) => int(load.noAnswer)],
  ['duplicate charges', (_, f) => int(f.duplicateCharges)],
  ['charges executed / unique payments', (_, f) => `${int(f.chargesExecuted)} / ${int(f.uniqueCharged)}`],
  [
    'refunds (order compensations)',
    ({ processor }) => int([...processor.refunds.values()].reduce((a, b) => a + b, 0)),
  ],
  ['processor calls per payment', (_, f) => f.callsPerPayment.toFixed(2)],
  ['repeats deduplicated by the processor', ({ processor }) => int(processor.deduplicated)],
  ['payments charged ≠ credited', (_, f) => int(f.paymentsMismatched)],
  ['accounts off their ledger', (_, f) => int(f.accountsOff)],
  ['lost events (credited, never handled)', (_, f) => `${int(f.lostEvents)} of ${int(f.creditedPayments)}`],
  ['events handled twice', (_, f) => int(f.eventsHandledTwice)],
  ['orders inconsistent (charge/stock/ship)', (_, f) => int(f.ordersInconsistent)],
  ['breaker transitions', ({ stats }) => int(stats.breakerTransitions)],
  ['calls refused by the open breaker', ({ stats }) => int(stats.breakerRefusals)],
  ['requests shed (load shedding)', ({ stats }) => int(stats.shed)],
  ['GET /accounts reads from the database', ({ stats }) => int(stats.accountReads)],
  ['latency p50', ({ load }) => ms(percentile(load.latenciesMs, 0.5))],
  ['latency p99', ({ load }) => ms(percentile(load.latenciesMs, 0.99))],
  ['latency p999', ({ load }) => ms(percentile(load.latenciesMs, 0.999))],
];

const embeddedNote = [
  'Latency is per operation, retries included. The bulwark build keeps its idempotency keys, outbox,',
  'inbox, saga log and fences in embedded PGlite (one WASM session on the main thread): that is most',
  'of its p50; the naive build writes only its own tables.',
];
const workersNote = (workers: number) => [
  `Latency is per operation, retries included. Each build ran in ${workers} processes; the bulwark build's`,
  'requests make several round trips to Redis and PostgreSQL (limit, idempotency claim, lock, fenced',
  'write with its outbox row, lock release, idempotent response): that is its p50.',
];

/**
 * Renders the side-by-side table of `runs` (protected first) and the protected build's
 * invariants, with whether they all held.
 *
 * @example
 * const { text, ok } = renderReport(await runLab({ durationMs: 25_000 }));
 * console.log(text);
 */
export function renderReport(
  runs: readonly BuildRun[],
  setting: { readonly workers?: number } = {},
): { text: string; ok: boolean } {
  const findings = runs.map(check);
  const table = [
    ['', ...runs.map((run) => run.name)],
    ...rows.map(([label, cell]) => [label, ...runs.map((run, index) => cell(run, findings[index]!))]),
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!)))
      .join('  ');
  const rule = widths.map((width) => '─'.repeat(width)).join('  ');
  const checks = invariants(findings[0]!);
  const verdicts = checks.map(
    ({ name, held, detail }) => `  ${held ? '✓' : '✗'} ${name}${held ? '' : `: ${detail}`}`,
  );
  const text = [
    line(table[0]!),
    rule,
    ...table.slice(1).map(line),
    '',
    ...((setting.workers ?? 0) === 0 ? embeddedNote : workersNote(setting.workers!)),
    '',
    `Invariants of the ${runs[0]!.name} build:`,
    ...verdicts,
  ].join('\n');
  return { text, ok: checks.every((invariant) => invariant.held) };
}
