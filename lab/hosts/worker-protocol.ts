/** The messages between the lab's runner and its worker processes (lab/worker.ts), over IPC. */
import type { BuildStats } from '../api/build.js';
import type { RunSeries } from '../series.js';

/** The real services of a multi-worker run. */
export interface ServiceUrls {
  readonly redis: string;
  readonly postgres: string;
  readonly nats: string;
}

/** What a worker is told to run (its first message). */
export interface WorkerConfig {
  readonly type: 'init';
  readonly build: 'bulwark' | 'naive';
  /** Names the worker (its breaker in the series). */
  readonly source: string;
  readonly seed: number;
  readonly durationMs: number;
  readonly services: ServiceUrls;
  /** The run's PostgreSQL schema (bank tables and bulwark stores). */
  readonly schema: string;
  /** The run's Redis key prefix. */
  readonly redisPrefix: string;
  /** The run's JetStream stream. */
  readonly stream: string;
  /** The main process's processor and warehouse. */
  readonly groundTruthUrl: string;
  readonly accounts: number;
  readonly tenantRatePerSecond: number;
  readonly resetTimeoutMs: number;
}

/** Runner → worker, after `init`. */
export type RunnerMessage =
  | { readonly type: 'start'; readonly atMs: number }
  | { readonly type: 'drain'; readonly timeoutMs: number }
  | { readonly type: 'close' };

/** Worker → runner. */
export type WorkerMessage =
  | { readonly type: 'ready'; readonly url: string }
  | { readonly type: 'drained'; readonly stats: BuildStats; readonly series: RunSeries }
  | { readonly type: 'closed' }
  | { readonly type: 'failed'; readonly error: string };
