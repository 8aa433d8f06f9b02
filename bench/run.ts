/**
 * `npm run bench [-- filter]`: runs every bench/*.bench.ts (or those whose name contains the
 * filter) in this process, one after another, and prints their tables.
 */
import { readdir } from 'node:fs/promises';

const filter = process.argv[2] ?? '';
const dir = new URL('./', import.meta.url);
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts') && f.includes(filter)).sort();
if (files.length === 0) {
  console.error(`no benchmark matches "${filter}"`);
  process.exit(1);
}
console.log(`# bulwark benchmarks, ${new Date().toISOString().slice(0, 10)}\n`);
for (const file of files) {
  const module = (await import(new URL(file, dir).href)) as { default: () => Promise<unknown> };
  await module.default();
}
