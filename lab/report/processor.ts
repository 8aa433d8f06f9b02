/** The processor chart: calls that reached the card processor per second, every build on one chart. */
import type { LineSeriesOption } from 'echarts';
import type { BuildRun } from '../checks.js';
import { buildColor, frame, midSecond, phaseBands, type Timebase, yAxisName } from './frame.js';
import { renderSvg } from './render.js';

/**
 * The SVG of the processor chart: for each build (its own colour), the calls that reached the card
 * processor in each second (every attempt of every retry), so retry storms during the outage and
 * the breaker's relief show side by side. The phases are shaded bands.
 *
 * @example
 * const svg = processorChart(runs, timebaseOf(runs, 25_000));
 */
export function processorChart(runs: readonly BuildRun[], time: Timebase): string {
  const lines: LineSeriesOption[] = runs.map((run, index) => ({
    type: 'line',
    name: run.name,
    data: run.series.counts['processor calls'].map((calls, second) => [midSecond(second), calls]),
    color: buildColor(index),
    lineStyle: { width: 2 },
    symbol: 'circle',
    symbolSize: 4,
  }));
  return renderSvg(
    {
      ...frame(
        'Calls reaching the card processor',
        'every attempt of every retry, per second',
        time,
        lines.map((line) => String(line.name)),
      ),
      yAxis: { type: 'value', minInterval: 1, boundaryGap: [0, '12%'], ...yAxisName('processor calls/s') },
      series: [phaseBands(time), ...lines],
    },
    'processor',
  );
}
