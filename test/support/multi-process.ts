/**
 * Multi-process tests: fork N real worker processes that run one TypeScript scenario against
 * the same Redis/PostgreSQL, and collect what each of them counted.
 *
 * The parent side is {@link runWorkers}; the worker side is {@link runScenario}, called at the top
 * level of the scenario file. This module does not import vitest, so scenario files may import
 * it. Workers run with `--import tsx`, so a scenario imports local files with `.js` suffixes as
 * everywhere else. A scenario must not import `services.ts` (it needs the vitest runner): pass
 * what it needs in the input, e.g. `redis.url` and `redis.key(...)`, or `pg.config()` (plain
 * data, search_path included) for a `new pg.Pool(input.db)`.
 *
 * Set `WORKER_OUTPUT=1` to see workers' output live; on failure it is attached to the error.
 *
 * @example
 * ```ts
 * // test/integration/scenarios/take.ts (the worker)
 * runScenario<{ url: string; key: string }, { admitted: number }>(async (input, { barrier }) => {
 *   const client = new Redis(input.url);
 *   await client.ping();
 *   await barrier();                  // everyone starts the measured part together
 *   // ... count
 *   client.disconnect();
 *   return { admitted };
 * });
 *
 * // in the test (the parent)
 * const results = await runWorkers<{ admitted: number }>({
 *   entry: new URL('./scenarios/take.ts', import.meta.url),
 *   workers: 4,
 *   input: { url: redis.url, key: redis.key('limit') },
 * });
 * ```
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

export { runScenario } from './scenario-worker.mjs';

/** The repository root: children run there so `tsx` and `node_modules` resolve as in the repo. */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** `--import` value that makes Node run TypeScript (tsx's ESM loader, by absolute URL). */
const tsxImport = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** Most output kept per worker and stream, in characters (the tail is kept). */
const OUTPUT_LIMIT = 64 * 1024;

/** Options of {@link runWorkers}. */
export interface RunWorkersOptions<I = unknown> {
  /** The scenario file (TypeScript or JavaScript) that calls {@link runScenario}. */
  readonly entry: string | URL;
  /** How many worker processes to fork (each gets `workerIndex` 0 … workers − 1). */
  readonly workers: number;
  /**
   * Sent to every worker; anything the structured clone algorithm takes (`serialization:
   * 'advanced'`), so Maps, Dates and bigints are fine, functions are not.
   */
  readonly input?: I;
  /**
   * Longest the whole run may take, process start-up included; then every worker is killed
   * and the run rejects. @default 15_000
   */
  readonly timeoutMs?: number;
  /** Extra environment variables for the workers (on top of this process's). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Also copy workers' stdout/stderr to this process's stderr as it arrives, each line prefixed
   * with `[worker i]`. Output is always kept and attached to the error on failure.
   * @default process.env.WORKER_OUTPUT === '1'
   */
  readonly echo?: boolean;
}

/** Why {@link runWorkers} rejected, with the failing worker's output. */
export class WorkerFailedError extends Error {
  override readonly name = 'WorkerFailedError';

  constructor(
    message: string,
    /** The worker that failed, or undefined for a failure of the whole run (timeout). */
    readonly workerIndex: number | undefined,
    /** Captured stdout/stderr of the workers concerned. */
    readonly output: string,
    options?: { cause?: unknown },
  ) {
    super(output === '' ? message : `${message}\n${output}`, options);
  }
}

/** What a scenario receives besides its input. */
export interface ScenarioContext {
  /** This worker's index, 0 … workers − 1. */
  readonly workerIndex: number;
  /** How many workers run the scenario. */
  readonly workers: number;
  /**
   * Resolves once every worker has reached its n-th `barrier()` (a worker that already
   * finished counts as arrived). Call it after setup (connections made) so the measured part
   * starts together. May be called several times.
   */
  barrier(): Promise<void>;
}

/** A worker's body: gets the input and returns its (structured-cloneable) result. */
export type Scenario<I, R> = (input: I, context: ScenarioContext) => R | Promise<R>;

type ParentMessage =
  | {
      readonly type: 'bulwark:init';
      readonly input: unknown;
      readonly workerIndex: number;
      readonly workers: number;
    }
  | { readonly type: 'bulwark:go'; readonly generation: number };

interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

type ChildMessage =
  | { readonly type: 'bulwark:barrier'; readonly generation: number }
  | { readonly type: 'bulwark:result'; readonly result: unknown }
  | { readonly type: 'bulwark:error'; readonly error: SerializedError };

function isChildMessage(message: unknown): message is ChildMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    typeof (message as { type?: unknown }).type === 'string' &&
    (message as { type: string }).type.startsWith('bulwark:')
  );
}

interface WorkerState {
  readonly index: number;
  readonly child: ChildProcess;
  readonly closed: Promise<void>;
  stdout: string;
  stderr: string;
  hasResult: boolean;
  result: unknown;
  error: SerializedError | undefined;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

function appendTail(text: string, chunk: string): string {
  const joined = text + chunk;
  return joined.length > OUTPUT_LIMIT ? joined.slice(joined.length - OUTPUT_LIMIT) : joined;
}

function outputOf(worker: WorkerState): string {
  const parts: string[] = [];
  if (worker.stdout.trim() !== '')
    parts.push(`--- worker ${worker.index} stdout ---\n${worker.stdout.trimEnd()}`);
  if (worker.stderr.trim() !== '')
    parts.push(`--- worker ${worker.index} stderr ---\n${worker.stderr.trimEnd()}`);
  return parts.join('\n');
}

function checkOptions(options: RunWorkersOptions<unknown>): void {
  if (!Number.isInteger(options.workers) || options.workers < 1) {
    throw new TypeError(`expected "workers" to be a positive integer, got ${String(options.workers)}`);
  }
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    throw new TypeError(`expected "timeoutMs" to be a positive number, got ${String(timeoutMs)}`);
  }
}

/**
 * Forks `workers` processes running `entry` (which calls {@link runScenario}) with `input`, and
 * resolves with each worker's result, in worker order, once all have reported and exited 0.
 *
 * Rejects with a {@link WorkerFailedError} carrying the worker's stdout/stderr, after killing
 * (SIGKILL) and reaping every other worker, when a worker throws, exits non-zero or by a signal,
 * exits without reporting, cannot be spawned, or the run exceeds `timeoutMs`.
 *
 * @throws TypeError (synchronously) on invalid options
 */
export function runWorkers<R = unknown, I = unknown>(options: RunWorkersOptions<I>): Promise<R[]> {
  checkOptions(options);
  const { workers: count, input, timeoutMs = 15_000, env } = options;
  const echo = options.echo ?? process.env.WORKER_OUTPUT === '1';
  const entry = typeof options.entry === 'string' ? options.entry : fileURLToPath(options.entry);

  return new Promise<R[]>((resolve, reject) => {
    const workers: WorkerState[] = [];
    const arrivals = new Map<number, Set<number>>();
    let settled = false;

    const fail = (message: string, worker: WorkerState | undefined, cause?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const other of workers) {
        if (other.exit === undefined) other.child.kill('SIGKILL');
      }
      void Promise.all(workers.map((w) => w.closed)).then(() => {
        const output = (worker === undefined ? workers : [worker]).map(outputOf).filter(Boolean).join('\n');
        reject(
          new WorkerFailedError(message, worker?.index, output, cause === undefined ? undefined : { cause }),
        );
      });
    };

    const timer = setTimeout(() => {
      const running = workers.filter((w) => !w.hasResult).map((w) => w.index);
      fail(
        `runWorkers: timed out after ${timeoutMs} ms; still running: workers ${running.join(', ')}`,
        undefined,
      );
    }, timeoutMs);

    const send = (worker: WorkerState, message: ParentMessage): void => {
      if (!worker.child.connected) return;
      worker.child.send(message, (error) => {
        if (error)
          fail(`runWorkers: could not message worker ${worker.index}: ${error.message}`, worker, error);
      });
    };

    const releaseBarriers = (): void => {
      for (const [generation, arrived] of arrivals) {
        const ready = workers.every((w) => arrived.has(w.index) || w.hasResult);
        if (!ready) continue;
        arrivals.delete(generation);
        for (const index of arrived) {
          const worker = workers[index];
          if (worker !== undefined) send(worker, { type: 'bulwark:go', generation });
        }
      }
    };

    const finishIfDone = (): void => {
      if (settled || !workers.every((w) => w.hasResult && w.exit !== undefined)) return;
      settled = true;
      clearTimeout(timer);
      resolve(workers.map((w) => w.result as R));
    };

    const onMessage = (worker: WorkerState, message: unknown): void => {
      if (settled || !isChildMessage(message)) return;
      if (message.type === 'bulwark:barrier') {
        let arrived = arrivals.get(message.generation);
        if (arrived === undefined) {
          arrived = new Set();
          arrivals.set(message.generation, arrived);
        }
        arrived.add(worker.index);
        releaseBarriers();
      } else if (message.type === 'bulwark:result') {
        worker.hasResult = true;
        worker.result = message.result;
        releaseBarriers();
        finishIfDone();
      } else {
        worker.error = message.error;
      }
    };

    const onClose = (worker: WorkerState, code: number | null, signal: NodeJS.Signals | null): void => {
      worker.exit = { code, signal };
      if (settled) return;
      if (worker.error !== undefined) {
        const { name, message, stack } = worker.error;
        fail(
          `runWorkers: worker ${worker.index} threw ${name}: ${message}${stack ? `\n${stack}` : ''}`,
          worker,
        );
      } else if (code !== 0) {
        fail(`runWorkers: worker ${worker.index} exited with ${signal ?? `code ${code}`}`, worker);
      } else if (!worker.hasResult) {
        fail(
          `runWorkers: worker ${worker.index} exited without reporting a result (did it call runScenario?)`,
          worker,
        );
      } else {
        finishIfDone();
      }
    };

    // A JavaScript scenario (one that imports the built dist/) runs under plain node: no loader to start.
    const execArgv = /\.[cm]?js$/.test(entry) ? [] : ['--import', tsxImport];
    for (let index = 0; index < count; index += 1) {
      const child = fork(entry, [], {
        cwd: repoRoot,
        execArgv,
        env: { ...process.env, ...env },
        serialization: 'advanced',
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      let resolveClosed: () => void = () => {};
      const worker: WorkerState = {
        index,
        child,
        closed: new Promise<void>((resolveClose) => {
          resolveClosed = resolveClose;
        }),
        stdout: '',
        stderr: '',
        hasResult: false,
        result: undefined,
        error: undefined,
        exit: undefined,
      };
      workers.push(worker);
      for (const stream of ['stdout', 'stderr'] as const) {
        child[stream]?.setEncoding('utf8');
        child[stream]?.on('data', (chunk: string) => {
          worker[stream] = appendTail(worker[stream], chunk);
          if (echo) process.stderr.write(chunk.replace(/^(?=.)/gm, `[worker ${index}] `));
        });
      }
      child.on('message', (message) => onMessage(worker, message));
      child.on('error', (error) => {
        // A spawn failure is followed by 'close' only sometimes; settle here either way.
        if (worker.exit === undefined) worker.exit = { code: null, signal: null };
        resolveClosed();
        fail(`runWorkers: worker ${index} could not run: ${error.message}`, worker, error);
      });
      child.on('close', (code, signal) => {
        onClose(worker, code, signal);
        resolveClosed();
      });
    }

    for (const worker of workers) {
      send(worker, { type: 'bulwark:init', input, workerIndex: worker.index, workers: count });
    }
  });
}
