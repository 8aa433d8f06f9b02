/**
 * Worker scenario for the failure paths of the multi-process harness: the worker `failing`
 * misbehaves as `mode` says while the others wait at the start barrier (or, with `hang`, all
 * workers hang).
 */
import { runScenario } from '../multi-process.js';

/** Input of this scenario. */
export interface MisbehaveInput {
  readonly mode: 'throw' | 'exit' | 'silent-exit' | 'hang';
  readonly failing: number;
}

runScenario<MisbehaveInput, { ok: true }>(async (input, { workerIndex, barrier }) => {
  if (input.mode === 'hang') await new Promise<never>(() => {});
  if (workerIndex === input.failing) {
    console.log(`worker ${workerIndex} is about to misbehave (${input.mode})`);
    if (input.mode === 'throw') throw new Error(`scenario failure in worker ${workerIndex}`);
    process.exit(input.mode === 'exit' ? 3 : 0);
  }
  await barrier();
  return { ok: true };
});
