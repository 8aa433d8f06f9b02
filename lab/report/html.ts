/** The lab's HTML report: one self-contained page, the table and the charts of a run. */
import type { BuildRun } from '../checks.js';
import { renderReport } from '../table.js';
import { phases } from '../timeline.js';
import { admissionChart, admissionKey, admissionScale } from './admission.js';
import { breakerChart } from './breaker.js';
import { timebaseOf } from './frame.js';
import { latencyChart } from './latency.js';
import { processorChart } from './processor.js';

/** What the page says about how the run was made. */
export interface ReportInfo {
  readonly seed: number;
  /** Length of the load per build, in ms. */
  readonly durationMs: number;
  /** Worker processes that served each build (0 or absent: the embedded, single-process run). */
  readonly workers?: number;
}

/** `text` with `& < > " '` escaped: safe as HTML text and inside a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!,
  );
}

const style = `
body { font-family: Helvetica, Arial, sans-serif; color: #0f172a; background: #f8fafc; margin: 0; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; }
.meta { color: #475569; margin: 0 0 12px; }
.verdict { display: inline-block; padding: 6px 12px; border-radius: 6px; font-weight: bold; }
.verdict.ok { background: #dcfce7; color: #166534; }
.verdict.failed { background: #fee2e2; color: #991b1b; }
figure { margin: 16px 0; background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 8px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: #475569; font-size: 13px; padding: 4px 8px 0; }
pre { background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 12px; overflow-x: auto;
  font: 12px/1.45 Menlo, Consolas, 'DejaVu Sans Mono', monospace; }
`;

const figure = (key: string, svg: string, caption: string) =>
  `<figure data-chart="${escapeHtml(key)}">\n${svg}\n<figcaption>${escapeHtml(caption)}</figcaption>\n</figure>`;

/**
 * The report of `runs` (bulwark first) as one self-contained HTML page: no script, no external
 * resource, inline CSS. It holds a title, how the run was made (`info`), whether the first build
 * kept every invariant, one `<figure data-chart="…">` per chart with its inline SVG — `latency`,
 * `breaker` (of the first build), `admission-<build>` (see {@link admissionKey}) for each build,
 * `processor` — and the plain-text table of {@link renderReport} (for `info.workers`) in a
 * `<pre>`. Every interpolated text is escaped. The same runs and info always give the same page.
 *
 * @example
 * const html = renderHtmlReport(runs, { seed: 1, durationMs: 25_000 });
 */
export function renderHtmlReport(runs: readonly BuildRun[], info: ReportInfo): string {
  const { text, ok } = renderReport(runs, info.workers === undefined ? {} : { workers: info.workers });
  const time = timebaseOf(runs, info.durationMs);
  const first = runs[0]!;
  const scale = admissionScale(runs);
  const workers = (info.workers ?? 0) > 0 ? ` · ${info.workers} worker processes per build` : '';
  const charts = [
    figure('latency', latencyChart(runs, time), 'Where each build spends its time, phase by phase.'),
    figure(
      'breaker',
      breakerChart(first, time),
      `When the ${first.name} build's breaker opened, probed (half-open) and closed again.`,
    ),
    ...runs.map((run) =>
      figure(
        admissionKey(run.name),
        admissionChart(run, time, scale),
        `What the ${run.name} build let in and turned away, second by second (same scale for every build).`,
      ),
    ),
    figure('processor', processorChart(runs, time), 'How hard each build hit the card processor.'),
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bulwark lab report — seed ${escapeHtml(String(info.seed))}</title>
<style>${style}</style>
</head>
<body>
<main>
<h1>bulwark lab report</h1>
<p class="meta">${escapeHtml(runs.map((run) => run.name).join(' vs '))} · seed ${escapeHtml(String(info.seed))} · ${escapeHtml(String(info.durationMs / 1_000))} s of load per build${escapeHtml(workers)} · phases: ${escapeHtml(phases.map((phase) => phase.name).join(', '))}</p>
<p class="verdict ${ok ? 'ok' : 'failed'}">${escapeHtml(ok ? `every invariant of the ${first.name} build held` : `an invariant of the ${first.name} build failed`)}</p>
<h2>Over time</h2>
${charts.join('\n')}
<h2>Side by side</h2>
<pre>${escapeHtml(text)}</pre>
</main>
</body>
</html>
`;
}
