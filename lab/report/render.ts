/**
 * Renders one ECharts option to a static SVG string on the server (no DOM, no canvas, no script in
 * the result): the one place the lab's report touches ECharts' rendering API.
 */

import type { EChartsOption } from 'echarts';
import { init } from 'echarts';

/** The pixel size of a chart. */
export interface ChartSize {
  readonly width: number;
  readonly height: number;
}

/** The size every chart of the report is drawn at unless told otherwise. */
export const defaultSize: ChartSize = { width: 960, height: 340 };

/** The ids and classes ECharts numbers from counters shared by every chart of the process. */
const generatedName = /\bzr\d+-[a-z]+-?\d+\b/g;

/**
 * Draws `option` (animation off) with ECharts' SVG server-side renderer and returns the `<svg>`
 * element as a string, scalable by its `viewBox`. Its ids and classes are renamed `chart-<id>-<n>`
 * in order of appearance, so several charts with distinct `id`s can share one page, and the same
 * option and `id` always give the same markup. The chart instance is disposed before returning.
 *
 * @example
 * const svg = renderSvg({ xAxis: { type: 'value' }, yAxis: { type: 'value' }, series: [] }, 'empty');
 */
export function renderSvg(option: EChartsOption, id: string, size: ChartSize = defaultSize): string {
  const chart = init(null, null, { renderer: 'svg', ssr: true, width: size.width, height: size.height });
  try {
    chart.setOption({ animation: false, backgroundColor: '#ffffff', ...option });
    const names = new Map<string, string>();
    return chart.renderToSVGString({ useViewBox: true }).replace(generatedName, (name) => {
      if (!names.has(name)) names.set(name, `chart-${id}-${names.size}`);
      return names.get(name)!;
    });
  } finally {
    chart.dispose();
  }
}
