import type { Scenario } from './multi-process.js';

/**
 * The worker side of `runWorkers`: call it once at the top level of the scenario file. Waits for
 * the input over IPC, runs `scenario`, sends its result back and exits (0 after a result, 1 after
 * a throw). A worker whose parent goes away exits at once.
 *
 * @throws Error when the file was not started by `runWorkers` (no IPC channel)
 */
export function runScenario<I = unknown, R = unknown>(scenario: Scenario<I, R>): void;
