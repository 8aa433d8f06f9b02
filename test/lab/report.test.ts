/**
 * The lab's HTML report: every chart draws real content from a run's series (checked on a small
 * synthetic run, in milliseconds), the page escapes what it interpolates, and the page opened in a
 * real headless Chromium shows every chart (screenshot: `lab-report.png` beside `lab-report.html`,
 * both at the repository root and git-ignored).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { BuildRun } from '../../lab/checks.js';
import { sourceColor } from '../../lab/report/breaker.js';
import { buildColor } from '../../lab/report/frame.js';
import { renderHtmlReport, writeHtmlReport } from '../../lab/report/index.js';
import type { StateMark } from '../../lab/series.js';
import { phases } from '../../lab/timeline.js';
import { launchChromium, skipWithoutChromium } from '../support/chromium.js';

const durationMs = 10_000;
const seconds = 11;
const outage = (second: number) => second >= 3 && second < 7;
const noisy = (second: number) => second === 7 || second === 8;

/** A plausible run of `name`: steady traffic, an outage (seconds 3–6), a noisy tenant (7–8). */
function syntheticRun(name: string, guarded: boolean, breaker: readonly StateMark[]): BuildRun {
  const perSecond = (f: (second: number) => number) => Array.from({ length: seconds }, (_, s) => f(s));
  const latencies = perSecond((s) => s).map((s) =>
    s === seconds - 1
      ? [] // nothing finished in the settle second: skipped on the chart
      : Array.from({ length: 20 }, (_, i) =>
          outage(s) && !guarded ? 200 + 60 * i : 4 + i * (s % 3 === 1 ? 9 : 2),
        ),
  );
  const flat = latencies.flat();
  return {
    name,
    load: {
      requests: 400,
      ok: 300,
      clientErrors: 0,
      tooManyRequests: 20,
      unavailable: 30,
      serverErrors: guarded ? 0 : 50,
      noAnswer: 0,
      operations: flat.length,
      succeeded: flat.length - 40,
      latenciesMs: flat,
    },
    processor: {
      calls: 120,
      charges: new Map([['pay-1', guarded ? 1 : 2]]),
      refunds: new Map(),
      deduplicated: guarded ? 3 : 0,
      references: 1,
      inFlight: 0,
    },
    warehouse: { held: new Map(), shipped: new Map() },
    bank: {
      balances: new Map([['acct-1', 500]]),
      ledgerSums: new Map([['acct-1', 500]]),
      credits: new Map([['pay-1', 1]]),
      creditedCents: new Map([['pay-1', 500]]),
      notifications: new Map([['pay-1', 1]]),
    },
    stats: {
      breakerTransitions: breaker.length,
      breakerRefusals: guarded ? 12 : 0,
      shed: 8,
      accountReads: 40,
    },
    series: {
      seconds,
      counts: {
        admitted: perSecond((s) => (s === seconds - 1 ? 0 : guarded && outage(s) ? 22 : 30)),
        shed: perSecond((s) => (guarded && outage(s) ? 8 : 0)),
        'rate-limited': perSecond((s) => (guarded && noisy(s) ? 15 : 0)),
        'processor calls': perSecond((s) => (outage(s) ? (guarded ? 2 : 60) : 12)),
      },
      latencies,
      breaker,
    },
  };
}

const opens = (source: string, lagMs: number): StateMark[] => [
  { atMs: 3_200 + lagMs, source, state: 'open' },
  { atMs: 4_200 + lagMs, source, state: 'half-open' },
  { atMs: 4_300 + lagMs, source, state: 'open' },
  { atMs: 6_900 + lagMs, source, state: 'half-open' },
  { atMs: 7_100 + lagMs, source, state: 'closed' },
];

const runs = [syntheticRun('bulwark', true, opens('breaker', 0)), syntheticRun('naive', false, [])];
const info = { seed: 7, durationMs };
const keys = ['latency', 'breaker', 'admission-bulwark', 'admission-naive', 'processor'];

/** The inline SVG of each `data-chart` figure of `html`, by key. */
function chartsOf(html: string): Map<string, string> {
  const found = html.matchAll(/<figure data-chart="([^"]+)">\s*(<svg[\s\S]*?<\/svg>)/g);
  return new Map([...found].map((match) => [match[1]!, match[2]!]));
}

/**
 * Series paths of `svg` painted `color` that go somewhere: not moved into place by a transform (as
 * legend icons and point symbols are), with two line segments or more (a line, a bar).
 */
const drawnIn = (svg: string, color: string) =>
  [...svg.matchAll(/<path [^>]*>/g)]
    .map(([tag]) => tag)
    .filter(
      (tag) =>
        !tag.includes(' transform=') &&
        (tag.includes(`stroke="${color}"`) || tag.includes(`fill="${color}"`)) &&
        (/ d="([^"]*)"/.exec(tag)?.[1]?.match(/[LlCcQq]/g)?.length ?? 0) >= 2,
    ).length;

describe('lab HTML report', () => {
  it('draws every chart from the series, with the phases, in one page without scripts', () => {
    const html = renderHtmlReport(runs, info);
    const charts = chartsOf(html);
    expect([...charts.keys()]).toEqual(keys);
    for (const [key, svg] of charts) {
      for (const phase of phases) expect(svg, `${key}: ${phase.name}`).toContain(`>${phase.name}</text>`);
      expect(svg, key).toContain('seconds into the run');
    }
    const [bulwark, naive] = [buildColor(0), buildColor(1)];
    for (const key of ['latency', 'processor']) {
      expect(drawnIn(charts.get(key)!, bulwark), `${key}: bulwark line`).toBeGreaterThan(0);
      expect(drawnIn(charts.get(key)!, naive), `${key}: naive line`).toBeGreaterThan(0);
    }
    expect(drawnIn(charts.get('breaker')!, bulwark)).toBeGreaterThan(0);
    for (const label of ['closed', 'half-open', 'open'])
      expect(charts.get('breaker')).toContain(`>${label}</text>`);
    expect(drawnIn(charts.get('admission-bulwark')!, '#16a34a')).toBeGreaterThan(0); // admitted bars
    expect(drawnIn(charts.get('admission-bulwark')!, '#f59e0b')).toBeGreaterThan(0); // shed bars
    expect(drawnIn(charts.get('admission-bulwark')!, '#7c3aed')).toBeGreaterThan(0); // rate-limited bars
    expect(charts.get('latency')).toContain('latency (ms, log scale)');
    expect(charts.get('admission-naive')).toContain('requests/s');
    expect(html).toContain('<pre>');
    expect(html).toContain('duplicate charges');
    expect(html).not.toMatch(/<script|<link|https?:\/\/(?!www\.w3\.org)/);
  });

  it('draws one step line per breaker when several processes ran', () => {
    const workers = ['worker-1', 'worker-2', 'worker-10'].flatMap((source, index) =>
      opens(source, index * 150),
    );
    const run = syntheticRun('bulwark', true, workers);
    const svg = chartsOf(renderHtmlReport([run], { ...info, workers: 3 })).get('breaker')!;
    for (const [index, source] of ['worker-1', 'worker-2', 'worker-10'].entries()) {
      expect(svg).toContain(`>${source}</text>`);
      expect(drawnIn(svg, sourceColor(index)), source).toBeGreaterThan(0);
    }
  });

  it('gives the same page for the same runs, with ids unique to each chart', () => {
    const html = renderHtmlReport(runs, info);
    renderHtmlReport(runs, { ...info, seed: 8 }); // ECharts' own counters move on in between
    expect(renderHtmlReport(runs, info)).toBe(html);
    const ids = [...html.matchAll(/ id="([^"]+)"/g)].map((match) => match[1]);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    expect(html).not.toMatch(/\bzr\d+-/);
  });

  it('escapes the text it interpolates', () => {
    const hostile = '<b>naive</b> & "co"';
    const html = renderHtmlReport([runs[0]!, { ...runs[1]!, name: hostile }], info);
    expect(html).not.toContain('<b>');
    expect(html).toContain('&lt;b&gt;naive&lt;/b&gt; &amp; &quot;co&quot;');
    expect(chartsOf(html).has('admission-b-naive-b-co')).toBe(true);
  });

  it.skipIf(skipWithoutChromium('the lab report browser test'))(
    'shows every chart in a real headless Chromium',
    async () => {
      const root = join(import.meta.dirname, '..', '..');
      const report = join(root, 'lab-report.html');
      await writeHtmlReport(report, runs, info);
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
        await page.goto(pathToFileURL(report).href);
        const shown = await page.$$eval('[data-chart]', (figures) =>
          figures.map((figure) => {
            const svg = figure.querySelector('svg');
            const box = svg?.getBoundingClientRect();
            const paints = [...(svg?.querySelectorAll('path') ?? [])]
              .filter((path) => {
                const bbox = path.getBBox(); // a series' line or bar, not a legend icon or a point symbol
                return !path.hasAttribute('transform') && bbox.width > 0 && bbox.height > 0;
              })
              .map((path) => path.getAttribute('stroke') ?? path.getAttribute('fill'));
            return { key: figure.dataset.chart, width: box?.width ?? 0, height: box?.height ?? 0, paints };
          }),
        );
        expect(shown.map((chart) => chart.key)).toEqual(keys);
        for (const chart of shown) {
          expect(chart.width, chart.key).toBeGreaterThan(0);
          expect(chart.height, chart.key).toBeGreaterThan(0);
        }
        const paintsOf = (key: string) => shown.find((chart) => chart.key === key)!.paints;
        expect(paintsOf('latency')).toEqual(expect.arrayContaining([buildColor(0), buildColor(1)]));
        expect(paintsOf('processor')).toEqual(expect.arrayContaining([buildColor(0), buildColor(1)]));
        expect(paintsOf('breaker')).toContain(buildColor(0));
        expect(paintsOf('admission-bulwark')).toEqual(
          expect.arrayContaining(['#16a34a', '#f59e0b', '#7c3aed']),
        );
        expect(paintsOf('admission-naive')).toContain('#16a34a');
        await page.screenshot({ path: join(root, 'lab-report.png'), fullPage: true });
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
