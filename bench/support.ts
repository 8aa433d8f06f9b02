/**
 * Shared helpers for side-by-side benchmarks: measure each case with mitata in one process and
 * print ns/op, overhead above a bare baseline, and ours ÷ peer ratios.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { measure } from 'mitata';

/** One measured case. */
export interface Case {
  readonly name: string;
  readonly fn: () => unknown;
}

/** A measured case: mean and median nanoseconds per call. */
export interface Result {
  readonly name: string;
  readonly avgNs: number;
  readonly p50Ns: number;
}

/** Measures every case (async cases are awaited per call) and returns mean/median ns per op. */
export async function measureAll(cases: readonly Case[]): Promise<Result[]> {
  const results: Result[] = [];
  for (const c of cases) {
    // Warm up outside mitata so JIT tiers settle for every case alike.
    for (let i = 0; i < 20_000; i++) await c.fn();
    const stats = await measure(c.fn, { min_cpu_time: 400e6 });
    results.push({ name: c.name, avgNs: stats.avg, p50Ns: stats.p50 });
  }
  return results;
}

/** Formats nanoseconds compactly. */
export function ns(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} µs` : `${value.toFixed(0)} ns`;
}

/** Prints a markdown table. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

/** One line describing the machine, for BENCHMARKS.md. */
export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `Node ${process.version}, ${os.cpus().length} × ${cpu}, ${os.platform()} ${os.arch()}`;
}

/** One ratio row: label, ours, peer, target. */
export type Comparison = readonly [label: string, ours: string, peer: string, target: string];

/**
 * The report of an overhead benchmark whose first case is the bare call: a table of ns/op and
 * overhead above bare, then a table of overhead ratios ours ÷ peer.
 */
export function overheadReport(
  title: string,
  results: readonly Result[],
  comparisons: readonly Comparison[],
): string {
  const bare = results[0]!.avgNs;
  const over = (name: string) => {
    const result = results.find((r) => r.name === name);
    if (result === undefined) throw new Error(`no benchmark case named "${name}"`);
    return Math.max(1, result.avgNs - bare);
  };
  const perCase = table(
    ['case', 'ns/op', 'overhead above bare'],
    results.map((r, i) => [r.name, ns(r.avgNs), i === 0 ? '—' : ns(Math.max(0, r.avgNs - bare))]),
  );
  const ratios = table(
    ['comparison (overhead ours ÷ peer)', 'ratio', 'target'],
    comparisons.map(([label, ours, peer, target]) => [label, (over(ours) / over(peer)).toFixed(3), target]),
  );
  return `### ${title}\n\n${machine()}\n\n${perCase}\n\n${ratios}\n`;
}

/** Operations per second of `op` run by `concurrency` loops for `durationMs` (`n` counts calls). */
export async function throughput(
  op: (n: number) => Promise<unknown>,
  concurrency: number,
  durationMs: number,
): Promise<number> {
  let count = 0;
  let n = 0;
  const end = performance.now() + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await op(n++);
        count++;
      }
    }),
  );
  return count / (durationMs / 1_000);
}

/**
 * Operations per second of each of `ops`, run in turns of `sliceMs` by `concurrency` loops for
 * `rounds` rounds: on a shared machine whose speed drifts (CPU steal), every contender sees the
 * same drift, so their ratio holds where back-to-back runs would not.
 */
export async function interleavedThroughput(
  ops: readonly ((n: number) => Promise<unknown>)[],
  concurrency: number,
  rounds: number,
  sliceMs: number,
): Promise<number[]> {
  const totals = ops.map(() => 0);
  for (let round = 0; round < rounds; round++) {
    for (const [i, op] of ops.entries()) totals[i]! += await throughput(op, concurrency, sliceMs);
  }
  return totals.map((total) => total / rounds);
}
