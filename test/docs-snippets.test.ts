/**
 * Every TypeScript block in README.md and docs/ compiles, as a module of its own, under the
 * project's strict compiler options, against the source (not a build). A block stands alone: it
 * imports what it uses and declares (`declare function ...`) the application code it stands for,
 * so a reader can paste it. A block that is deliberately not a program (an anti-pattern shown on
 * purpose) opens with ```ts no-check <why>, and says why right there.
 */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  extractSnippets,
  projectSnippets,
  type Snippet,
  type SnippetCheck,
  type SnippetDiagnostic,
  typeCheckSnippets,
} from './support/doc-snippets.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const snippets = projectSnippets(root);

// Blocks that check the checker, compiled in the same program as the docs' own.
const misTyped: Snippet = {
  file: 'probe.md',
  line: 10,
  indent: 2,
  code: "import { retry } from 'bulwark';\nretry();\nconst count: number = 'one';\n",
};
const awaitsAndImportsEverySubpath: Snippet = {
  file: 'probe.md',
  line: 20,
  indent: 0,
  code: [
    "import { Redis } from 'ioredis';",
    "import { pipeline, retry } from 'bulwark';",
    "import { rateLimitMiddleware } from 'bulwark/http';",
    "import { natsJetStreamPublisher } from 'bulwark/nats';",
    "import { loadShedder } from 'bulwark/node';",
    "import * as postgres from 'bulwark/postgres';",
    "import { redisStores } from 'bulwark/redis';",
    "import { FakeClock } from 'bulwark/testing';",
    'const clock = new FakeClock();',
    'await clock.advance(1);',
    'const value: number = await pipeline(retry({ clock })).execute(() => 1);',
    'void [value, rateLimitMiddleware, natsJetStreamPublisher, loadShedder, postgres, redisStores, Redis];',
  ].join('\n'),
};
const skipped: Snippet = {
  file: 'probe.md',
  line: 40,
  indent: 0,
  code: 'this is not TypeScript',
  noCheck: 'probe',
};
const probes = [misTyped, awaitsAndImportsEverySubpath, skipped];

let check: SnippetCheck;
beforeAll(() => {
  check = typeCheckSnippets(root, [...snippets, ...probes]);
}, 60_000);

const diagnosticsOf = (snippet: Snippet): SnippetDiagnostic[] => {
  const index = [...snippets, ...probes].indexOf(snippet);
  return check.diagnostics[index]!;
};
const lines = (diagnostics: SnippetDiagnostic[]): string[] =>
  diagnostics.map(({ location, message }) => `${location} ${message}`);

describe('the snippet checker', () => {
  it('reports a type error at its line and column in the Markdown file', () => {
    expect(lines(diagnosticsOf(misTyped))).toEqual([
      "probe.md:13:9 TS2322: Type 'string' is not assignable to type 'number'.",
    ]);
  });

  it('accepts top-level await and resolves every bulwark entry point to src/, others from node_modules', () => {
    expect(lines(diagnosticsOf(awaitsAndImportsEverySubpath))).toEqual([]);
    const files = check.programFiles.map((file) => file.slice(root.length).replaceAll('\\', '/'));
    for (const entry of [
      'index',
      'http/index',
      'node/index',
      'stores/nats/index',
      'stores/postgres/index',
      'testing/index',
    ]) {
      expect(files).toContain(`src/${entry}.ts`);
    }
    expect(files).toContain('src/stores/redis/index.ts');
    expect(files.some((file) => file.startsWith('dist/'))).toBe(false);
    expect(files.some((file) => file.startsWith('node_modules/ioredis/'))).toBe(true);
  });

  it('skips a block marked no-check', () => {
    expect(diagnosticsOf(skipped)).toEqual([]);
  });

  it('extracts ts and typescript blocks only, skipping other fences whole, with their indentation', () => {
    const markdown = [
      '# Title', // 1
      '```sh', // 2
      'npm install bulwark', // 3
      '```', // 4
      '````md', // 5
      '```ts', // 6
      'not taken: inside an md block', // 7
      '```', // 8
      '````', // 9
      '1. A step:', // 10
      '   ```typescript', // 11
      '   const a = 1;', // 12
      '     const b = 2;', // 13
      '   ```', // 14
      '```ts no-check shows the anti-pattern', // 15
      'broken(', // 16
      '```', // 17
    ].join('\n');
    expect(extractSnippets('x.md', markdown)).toEqual([
      { file: 'x.md', line: 11, code: 'const a = 1;\n  const b = 2;', indent: 3 },
      { file: 'x.md', line: 15, code: 'broken(', indent: 0, noCheck: 'shows the anti-pattern' },
    ]);
  });

  it('reads files with CRLF line ends', () => {
    expect(extractSnippets('x.md', '```ts\r\nconst a = 1;\r\n```\r\n')).toEqual([
      { file: 'x.md', line: 1, code: 'const a = 1;', indent: 0 },
    ]);
  });

  it('refuses a block that is never closed', () => {
    expect(() => extractSnippets('x.md', 'text\n```ts\nconst a = 1;\n')).toThrow(
      'x.md:2: code block never closed',
    );
  });
});

describe('README.md and docs/', () => {
  it('have TypeScript blocks to check', () => {
    expect(snippets.length).toBeGreaterThan(10);
  });

  it('say why next to every block that opts out of type-checking', () => {
    const unexplained = snippets.filter((snippet) => snippet.noCheck === '');
    expect(unexplained.map((snippet) => `${snippet.file}:${snippet.line}`)).toEqual([]);
  });

  it.each(snippets.map((snippet) => [`${snippet.file}:${snippet.line}`, snippet] as const))(
    '%s compiles',
    (_, snippet) => {
      expect(lines(diagnosticsOf(snippet))).toEqual([]);
    },
  );
});
