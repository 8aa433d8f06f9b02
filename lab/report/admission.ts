/** The admission chart of one build: admitted, shed and rate-limited requests per second, stacked. */
import type { BarSeriesOption } from 'echarts';
import type { BuildRun } from '../checks.js';
import type { CountName } from '../series.js';
import { frame, midSecond, phaseBands, type Timebase, yAxisName } from './frame.js';
import { renderSvg } from './render.js';

const outcomes: readonly (readonly [CountName, string])[] = [
  ['admitted', '#16a34a'],
  ['shed', '#f59e0b'],
  ['rate-limited', '#7c3aed'],
];

/**
 * The `data-chart` key of the admission chart of the build named `name`: `admission-` and the name
 * in lower-case kebab (`admission-bulwark`).
 */
export function admissionKey(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `admission-${slug || 'build'}`;
}

/** A y scale: its top and the step between its ticks. */
export interface Scale {
  readonly max: number;
  readonly interval: number;
}

/** The first 1, 2 or 5 × 10ⁿ at or above `value` (at least 1). */
function niceStep(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(1, value)));
  return [1, 2, 5, 10].map((factor) => factor * magnitude).find((step) => step >= value)!;
}

/**
 * The y scale shared by the admission charts of `runs`, so the builds compare at a glance: about
 * five round ticks up to the most requests any build saw in one second, plus some headroom that
 * keeps the phase labels above the bars.
 */
export function admissionScale(runs: readonly BuildRun[]): Scale {
  const busiest = Math.max(
    1,
    ...runs.flatMap((run) =>
      run.series.counts.admitted.map((_, second) =>
        outcomes.reduce((sum, [name]) => sum + (run.series.counts[name][second] ?? 0), 0),
      ),
    ),
  );
  const top = busiest * 1.15;
  const interval = niceStep(top / 5);
  return { max: Math.ceil(top / interval) * interval, interval };
}

/**
 * The SVG of `run`'s admission chart: for each second, a bar of the requests it admitted (green),
 * shed (amber) and rate-limited (violet), stacked, in requests/s, on `scale` when given (pass
 * {@link admissionScale} of all runs so the builds compare at a glance). The phases are shaded
 * bands.
 *
 * @example
 * const svg = admissionChart(runs[0], timebaseOf(runs, 25_000), admissionScale(runs));
 */
export function admissionChart(run: BuildRun, time: Timebase, scale?: Scale): string {
  const bars: BarSeriesOption[] = outcomes.map(([name, color]) => ({
    type: 'bar',
    name,
    stack: 'requests',
    color,
    barWidth: '70%',
    data: run.series.counts[name].map((count, second) => [midSecond(second), count]),
  }));
  return renderSvg(
    {
      ...frame(
        `Admission per second — ${run.name}`,
        'requests admitted, shed by load shedding, refused by rate limiting',
        time,
        outcomes.map(([name]) => name),
      ),
      yAxis: {
        type: 'value',
        minInterval: 1,
        ...(scale === undefined ? {} : { max: scale.max, interval: scale.interval }),
        ...yAxisName('requests/s'),
      },
      series: [phaseBands(time), ...bars],
    },
    admissionKey(run.name),
  );
}
