/**
 * The published declarations under the strictest settings users run: `test/types/consumer/` is a
 * project with `strict`, `exactOptionalPropertyTypes` and `skipLibCheck: false` that imports every
 * subpath of the BUILT package (dist/, which `npm test` builds first) through the package's own
 * name and passes an explicit `undefined` to every optional option. This test runs its `tsc`.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const project = fileURLToPath(new URL('./consumer/tsconfig.json', import.meta.url));

describe('declarations for a strict consumer', () => {
  it('compile under strict + exactOptionalPropertyTypes + skipLibCheck: false, and optional options take undefined', async () => {
    const result = await run(process.execPath, [tsc, '-p', project, '--pretty', 'false']).then(
      () => '',
      (error: { stdout?: string; stderr?: string; message: string }) =>
        `${error.stdout ?? ''}${error.stderr ?? ''}` || error.message,
    );
    // tsc prints one line per error; an empty output is a clean compile
    expect(result).toBe('');
  }, 120_000);
});
