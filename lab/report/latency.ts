/** The latency chart: per-second p50 and p99 of every build, on one log-scale chart. */
import type { LineSeriesOption } from 'echarts';
import type { BuildRun } from '../checks.js';
import { percentile } from '../load/stats.js';
import { buildColor, frame, midSecond, phaseBands, type Timebase, yAxisName } from './frame.js';
import { renderSvg } from './render.js';

/** Latencies are drawn on a log axis: a 0 ms latency is drawn at this floor instead. */
const floorMs = 0.1;

function points(latencies: readonly (readonly number[])[], p: number): [number, number][] {
  const drawn: [number, number][] = [];
  latencies.forEach((values, second) => {
    if (values.length > 0) drawn.push([midSecond(second), Math.max(floorMs, percentile(values, p))]);
  });
  return drawn;
}

/**
 * The SVG of the latency chart: for each build (its own colour), the p50 (solid) and the p99
 * (dashed) of the operations that finished in each second, in ms on a log scale; seconds in which
 * none finished are skipped. The phases are shaded bands.
 *
 * @example
 * const svg = latencyChart(runs, timebaseOf(runs, 25_000));
 */
export function latencyChart(runs: readonly BuildRun[], time: Timebase): string {
  const lines: LineSeriesOption[] = runs.flatMap((run, index) =>
    (
      [
        [0.5, 'p50', 'solid'],
        [0.99, 'p99', 'dashed'],
      ] as const
    ).map(([p, label, dash]) => ({
      type: 'line',
      name: `${run.name} ${label}`,
      data: points(run.series.latencies, p),
      color: buildColor(index),
      lineStyle: { width: 2, type: dash },
      symbol: 'circle',
      symbolSize: 4,
      showSymbol: true,
    })),
  );
  return renderSvg(
    {
      ...frame(
        'Operation latency per second',
        'p50 (solid) and p99 (dashed) of the operations that finished in each second, retries included',
        time,
        lines.map((line) => String(line.name)),
      ),
      yAxis: { type: 'log', logBase: 10, ...yAxisName('latency (ms, log scale)') },
      series: [phaseBands(time), ...lines],
    },
    'latency',
  );
}
