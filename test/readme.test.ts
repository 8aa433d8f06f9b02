/**
 * The README's quick start must run as written: extract it, point its import at the source, run
 * it in a child process and check its output.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

it('the README quick start runs and prints what it promises', async () => {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(code).toBeDefined();
  const source = code!.replace("from 'bulwark'", `from ${JSON.stringify(join(root, 'src/index.ts'))}`);
  const dir = await mkdtemp(join(tmpdir(), 'bulwark-readme-'));
  try {
    const file = join(dir, 'quickstart.mts');
    await writeFile(file, source);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 15_000 });
    expect(stdout).toBe('attempt 1 failed (unavailable)\nattempt 2 failed (unavailable)\nprice: 42\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
