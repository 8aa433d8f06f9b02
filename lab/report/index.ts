/**
 * The lab's HTML report (`lab-report.html`): {@link renderHtmlReport} builds the page,
 * {@link writeHtmlReport} writes it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BuildRun } from '../checks.js';
import { type ReportInfo, renderHtmlReport } from './html.js';

export { escapeHtml, type ReportInfo, renderHtmlReport } from './html.js';

/**
 * Writes the report of `runs` (see {@link renderHtmlReport}) to `path` as UTF-8, creating its
 * folder if needed, replacing any earlier file; resolves once it is written.
 *
 * @example
 * await writeHtmlReport('lab-report.html', runs, { seed: 1, durationMs: 25_000 });
 */
export async function writeHtmlReport(
  path: string,
  runs: readonly BuildRun[],
  info: ReportInfo,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, renderHtmlReport(runs, info), 'utf8');
}
