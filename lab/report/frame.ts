/**
 * What every chart of the report shares: the time axis (seconds into the run, with the script's
 * phases as shaded bands), the colours that tell the builds apart, and the title, legend and grid
 * layout.
 */
import type { EChartsOption, LineSeriesOption } from 'echarts';
import type { BuildRun } from '../checks.js';
import { type PhaseName, phases } from '../timeline.js';

/** The time span every chart draws: the run's scripted length and the seconds recorded. */
export interface Timebase {
  /** Length of the scripted load in ms: the phases are fractions of it. */
  readonly durationMs: number;
  /** Seconds recorded (the longest series of the runs, settle second included): the axis's end. */
  readonly seconds: number;
}

/** The timebase of `runs` whose load lasted `durationMs`. */
export function timebaseOf(runs: readonly BuildRun[], durationMs: number): Timebase {
  const recorded = Math.max(0, ...runs.map((run) => run.series.seconds));
  return { durationMs, seconds: Math.max(recorded, Math.ceil(durationMs / 1_000)) };
}

const buildColors = ['#1d4ed8', '#c2410c', '#047857', '#7e22ce'] as const;

/** The colour of the build at `index` of the runs (bulwark first): the same on every chart. */
export function buildColor(index: number): string {
  return buildColors[index % buildColors.length]!;
}

const phaseFills: Readonly<Record<PhaseName, string>> = {
  'warm-up': 'rgba(148, 163, 184, 0.16)',
  'latency spikes': 'rgba(234, 179, 8, 0.16)',
  outage: 'rgba(220, 38, 38, 0.13)',
  'noisy tenant': 'rgba(147, 51, 234, 0.12)',
  recovery: 'rgba(22, 163, 74, 0.12)',
};

/**
 * A series that draws nothing but the phases of the run as shaded, labelled bands across the whole
 * plot (one per phase, from `from × duration` to `to × duration` seconds). Keep it out of the
 * legend by listing the legend's entries.
 */
export function phaseBands(time: Timebase): LineSeriesOption {
  const seconds = (fraction: number) => (fraction * time.durationMs) / 1_000;
  return {
    type: 'line',
    name: 'phases',
    data: [],
    silent: true,
    markArea: {
      silent: true,
      label: { position: 'insideTop', color: '#475569', fontSize: 11, distance: 4 },
      data: phases.map((phase) => [
        { name: phase.name, xAxis: seconds(phase.from), itemStyle: { color: phaseFills[phase.name] } },
        { xAxis: seconds(phase.to) },
      ]),
    },
  };
}

/** Where a per-second value is drawn: the middle of its second. */
export const midSecond = (second: number): number => second + 0.5;

/** The options of a chart's title and subtitle, legend (exactly `legend`), grid and time axis. */
export function frame(
  title: string,
  subtitle: string,
  time: Timebase,
  legend: readonly string[],
): EChartsOption {
  return {
    textStyle: { fontFamily: 'Helvetica, Arial, sans-serif' },
    title: {
      text: title,
      subtext: subtitle,
      left: 12,
      top: 8,
      textStyle: { fontSize: 16, color: '#0f172a' },
      subtextStyle: { fontSize: 12, color: '#475569' },
    },
    legend: {
      data: [...legend],
      top: 12,
      right: 16,
      itemGap: 16,
      itemWidth: 34,
      itemHeight: 8,
      textStyle: { fontSize: 12 },
    },
    grid: { left: 96, right: 28, top: 78, bottom: 56, outerBoundsMode: 'none' },
    xAxis: {
      type: 'value',
      min: 0,
      max: time.seconds,
      interval: time.seconds > 30 ? 5 : time.seconds > 12 ? 2 : 1,
      name: 'seconds into the run',
      nameLocation: 'middle',
      nameGap: 30,
      axisLine: { onZero: false },
      containShape: false, // bars sit inside their second: keep 0 s at the plot's left edge
      splitLine: { show: false },
    },
  };
}

/** The naming options of a y axis whose unit is `name`: along its middle, rotated. */
export function yAxisName(name: string) {
  return { name, nameLocation: 'middle', nameGap: 66, nameRotate: 90 } as const;
}
