/**
 * `npm start` as a newcomer runs it: the lab's command line on embedded stores, with every
 * service URL pointing at a closed port (plain `npm start` must not need, or even try, Redis,
 * PostgreSQL or NATS). It must finish, exit 0 with every invariant of the bulwark build held, and
 * write the HTML report with all its charts.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const closedPorts = {
  REDIS_URL: 'redis://127.0.0.1:1',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test',
  NATS_URL: 'nats://127.0.0.1:1',
};

it('runs on embedded stores with no service reachable, and writes the report', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bulwark-lab-'));
  try {
    const report = join(dir, 'report.html');
    const { stdout } = await promisify(execFile)(
      'npx',
      ['tsx', 'lab/main.ts', '--duration', '2', '--seed', '3', '--report', report],
      { env: { ...process.env, ...closedPorts } },
    );
    expect(stdout).toContain('embedded stores');
    for (const invariant of [
      'no duplicate charge',
      'no lost event',
      'balances consistent',
      'orders consistent',
    ])
      expect(stdout).toContain(`✓ ${invariant}`);
    expect(stdout).not.toContain('✗');
    const html = await readFile(report, 'utf8');
    for (const chart of ['latency', 'breaker', 'admission-bulwark', 'admission-naive', 'processor'])
      expect(html).toMatch(new RegExp(`data-chart="${chart}"[^>]*>\\s*(<[^>]+>\\s*)*<svg`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);
