/** The breaker chart of one build: each breaker's state over the run, as a step line. */
import type { LineSeriesOption } from 'echarts';
import type { BuildRun } from '../checks.js';
import type { StateMark } from '../series.js';
import { buildColor, frame, phaseBands, type Timebase, yAxisName } from './frame.js';
import { renderSvg } from './render.js';

/** The levels of the states the circuit breaker reports (`CircuitState` in src/circuit-breaker). */
const levels = ['closed', 'half-open', 'open', 'isolated'] as const;

function levelOf(state: string): number {
  const level = levels.indexOf(state as (typeof levels)[number]);
  return level === -1 ? levels.length : level; // an unknown state: above every known one
}

const sourceColors = ['#1d4ed8', '#0891b2', '#7c3aed', '#db2777', '#65a30d', '#ca8a04'] as const;

/**
 * The colour of the breaker at `index` of a chart's sources (natural order): blues and other hues
 * that keep clear of the naive build's orange. A single breaker is drawn in the first build's colour.
 */
export function sourceColor(index: number, sources = 2): string {
  return sources === 1 ? buildColor(0) : sourceColors[index % sourceColors.length]!;
}

/** Sources in natural order ('worker-2' before 'worker-10'). */
function sourcesOf(marks: readonly StateMark[]): string[] {
  return [...new Set(marks.map((mark) => mark.source))].sort((a, b) =>
    a.localeCompare(b, 'en', { numeric: true }),
  );
}

/**
 * The SVG of `run`'s breaker chart: for each breaker (`source`; one per worker process in a
 * multi-worker run, each its own colour, drawn slightly apart so overlapping lines stay visible),
 * a step line of its state (closed = 0, half-open = 1, open = 2, labelled by name; isolated and
 * unknown states above) from closed at 0 s through each recorded change to the end of the axis.
 * A run without any change draws one closed line.
 *
 * @example
 * const svg = breakerChart(runs[0], timebaseOf(runs, 25_000));
 */
export function breakerChart(run: BuildRun, time: Timebase): string {
  const marks = run.series.breaker;
  const sources = sourcesOf(marks);
  if (sources.length === 0) sources.push('breaker (no state change)');
  const top = Math.max(2, ...marks.map((mark) => levelOf(mark.state)));
  const names = [...levels, 'other'];
  const ticks = names.map((_, level) => level).filter((level) => level <= top);
  const lines: LineSeriesOption[] = sources.map((source, index) => {
    const offset = (index - (sources.length - 1) / 2) * Math.min(0.08, 0.4 / sources.length);
    const own = marks.filter((mark) => mark.source === source);
    const steps = [[0, 0], ...own.map((mark) => [mark.atMs / 1_000, levelOf(mark.state)])];
    steps.push([time.seconds, steps.at(-1)![1]!]);
    return {
      type: 'line',
      name: source,
      step: 'end',
      data: steps.map(([at, level]) => [at!, level! + offset]),
      color: sourceColor(index, sources.length),
      lineStyle: { width: 2 },
      showSymbol: false,
    };
  });
  return renderSvg(
    {
      ...frame(
        `Circuit breaker state — ${run.name}`,
        `${sources.length === 1 ? 'the breaker' : 'each breaker'} around the card processor; a step is a state change`,
        time,
        sources,
      ),
      yAxis: {
        type: 'value',
        min: -0.4,
        max: top + 0.4,
        axisTick: { customValues: ticks },
        axisLabel: { customValues: ticks, formatter: (value: number) => names[Math.round(value)] ?? '' },
        splitLine: { show: false },
        ...yAxisName('breaker state'),
      },
      series: [phaseBands(time), ...lines],
    },
    'breaker',
  );
}
