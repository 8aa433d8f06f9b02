/**
 * Type-checks the TypeScript code blocks of Markdown files. Each block becomes its own virtual
 * module beside its Markdown file, and all of them are checked in one TypeScript program with the
 * project's compiler options: `bulwark` and its subpaths resolve to `src/` (read from package.json's
 * `exports`, so no build is needed), every other import from `node_modules`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/** One ```ts (or ```typescript) block of a Markdown file. */
export interface Snippet {
  /** The Markdown file, relative to the project root (`docs/retry.md`). */
  readonly file: string;
  /** The 1-based line of the opening fence in `file`. */
  readonly line: number;
  /** The block's text, its fence's indentation removed. */
  readonly code: string;
  /** The indentation removed from every line (columns shift by it). */
  readonly indent: number;
  /**
   * Set for a block opened with ```ts no-check <why>: the reason it is deliberately not a program
   * that compiles (an anti-pattern shown on purpose). Such a block is not type-checked.
   */
  readonly noCheck?: string;
}

/** One compiler diagnostic, located in the Markdown file. */
export interface SnippetDiagnostic {
  /** `docs/retry.md:42:7`: the Markdown file, line and column of the diagnostic. */
  readonly location: string;
  /** TypeScript's message, with its `TSxxxx` code. */
  readonly message: string;
}

const languages = new Set(['ts', 'typescript']);
const fence = /^( *)(`{3,}|~{3,})(.*)$/;

/**
 * Every TypeScript block of one Markdown text, in order. Fences follow CommonMark: a block closes
 * at a fence of the same character at least as long, and blocks in other languages are skipped
 * whole (so a ```ts inside a ```md example is not taken). Throws on a block left unclosed.
 */
export function extractSnippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split(/\r?\n/);
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = fence.exec(lines[i]!);
    if (open === null) continue;
    const [, spaces = '', marks = '', info = ''] = open;
    const close = new RegExp(`^ *${marks[0]}{${marks.length},} *$`);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`${file}:${i + 1}: code block never closed`);
    const [language = '', flag, ...reason] = info.trim().split(/\s+/);
    if (languages.has(language.toLowerCase())) {
      const indent = spaces.length;
      const code = lines
        .slice(i + 1, end)
        .map((text) => text.slice(Math.min(indent, text.length - text.trimStart().length)))
        .join('\n');
      const snippet: Snippet = { file, line: i + 1, code, indent };
      snippets.push(flag === 'no-check' ? { ...snippet, noCheck: reason.join(' ') } : snippet);
    }
    i = end;
  }
  return snippets;
}

/** README.md and every Markdown file under docs/, relative to `root`, sorted. */
export function documentationFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  return ['README.md', ...docs.sort()];
}

/** Where a snippet lives in the program: a virtual module beside its Markdown file. */
function virtualPath(root: string, snippet: Snippet): string {
  return join(root, `${snippet.file}.snippet-${snippet.line}.mts`);
}

/** `paths` sending each `bulwark` entry point of package.json's `exports` to its source file. */
function sourcePaths(root: string): Record<string, string[]> {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { types?: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    const source = types?.replace(/^\.\/dist\/(.*)\.d\.ts$/, 'src/$1.ts');
    if (source === undefined || source === types) continue;
    paths[manifest.name + subpath.slice(1)] = [join(root, source)];
  }
  return paths;
}

/** The project's tsconfig.json options, checking only, plus module detection and the source paths. */
function compilerOptions(root: string): ts.CompilerOptions {
  const configFile = join(root, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configFile, ts.sys.readFile);
  if (error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root, undefined, configFile);
  return {
    ...options,
    noEmit: true,
    declaration: false,
    sourceMap: false,
    // Every block is a module of its own, even one without an import.
    moduleDetection: ts.ModuleDetectionKind.Force,
    paths: sourcePaths(root),
  };
}

/** What {@link typeCheckSnippets} found. */
export interface SnippetCheck {
  /** Each snippet's diagnostics, in the order given; an empty list means the block compiles. */
  readonly diagnostics: SnippetDiagnostic[][];
  /** Every file the program read (snippets, the sources they import, declaration files). */
  readonly programFiles: string[];
}

/**
 * Type-checks `snippets` (blocks marked no-check are skipped) in one program. Diagnostics of the
 * program as a whole (options, missing libraries) throw, since no snippet can be judged then.
 */
export function typeCheckSnippets(root: string, snippets: readonly Snippet[]): SnippetCheck {
  const options = compilerOptions(root);
  const checked = snippets.filter((snippet) => snippet.noCheck === undefined);
  const virtual = new Map(checked.map((snippet) => [virtualPath(root, snippet), snippet]));

  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (path) => virtual.has(path) || fileExists.call(host, path);
  host.readFile = (path) => virtual.get(path)?.code ?? readFile.call(host, path);
  host.getSourceFile = (path, language, onError, create) => {
    const snippet = virtual.get(path);
    if (snippet === undefined) return getSourceFile.call(host, path, language, onError, create);
    return ts.createSourceFile(path, snippet.code, language);
  };

  const program = ts.createProgram({ rootNames: [...virtual.keys()], options, host });
  const global = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
  if (global.length > 0) throw new Error(ts.formatDiagnostics(global, host));

  const diagnostics = snippets.map((snippet) => {
    if (snippet.noCheck !== undefined) return [];
    const source = program.getSourceFile(virtualPath(root, snippet));
    if (source === undefined) throw new Error(`${snippet.file}:${snippet.line}: not in the program`);
    const found = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    return found.map((diagnostic) => locate(snippet, diagnostic));
  });
  return { diagnostics, programFiles: program.getSourceFiles().map((source) => source.fileName) };
}

/** A diagnostic of a snippet's module, moved to its place in the Markdown file. */
function locate(snippet: Snippet, diagnostic: ts.Diagnostic): SnippetDiagnostic {
  const message = `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  if (diagnostic.file === undefined || diagnostic.start === undefined) {
    return { location: `${snippet.file}:${snippet.line}`, message };
  }
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const at = `${snippet.file}:${snippet.line + 1 + line}:${snippet.indent + character + 1}`;
  return { location: at, message };
}

/** Every snippet of README.md and docs/, read from disk. */
export function projectSnippets(root: string): Snippet[] {
  return documentationFiles(root).flatMap((file) =>
    extractSnippets(file, readFileSync(join(root, file), 'utf8')),
  );
}
