// The worker side of runWorkers (test/support/multi-process.ts), in plain JavaScript so that a
// scenario importing the built dist/ runs under plain node, with no TypeScript loader to start.
// Types: scenario-worker.d.mts.

/** @param {unknown} error */
function serializeError(error) {
  if (error instanceof Error) {
    return error.stack === undefined
      ? { name: error.name, message: error.message }
      : { name: error.name, message: error.message, stack: error.stack };
  }
  return { name: 'NonError', message: String(error) };
}

/**
 * Call once at the top level of a scenario file. Waits for the input over IPC, runs `scenario`,
 * sends its result back and exits (0 after a result, 1 after a throw, so open handles in the
 * scenario cannot hang the run). A worker whose parent goes away exits at once.
 *
 * @param {(input: any, context: any) => unknown} scenario
 */
export function runScenario(scenario) {
  const sendRaw = process.send?.bind(process);
  if (sendRaw === undefined) {
    throw new Error(
      'runScenario(): this file is a worker scenario; start it with runWorkers() (test/support/multi-process.ts)',
    );
  }
  /** @param {object} message */
  const send = (message) =>
    new Promise((resolve, reject) => {
      sendRaw(message, undefined, undefined, (/** @type {Error | null} */ error) =>
        error ? reject(error) : resolve(undefined),
      );
    });

  /** @type {Map<number, () => void>} */
  const waiting = new Map();
  let generation = 0;
  let started = false;

  process.on('disconnect', () => process.exit(70));
  process.on('message', (/** @type {any} */ message) => {
    if (message.type === 'bulwark:go') {
      waiting.get(message.generation)?.();
      waiting.delete(message.generation);
      return;
    }
    if (message.type !== 'bulwark:init' || started) return;
    started = true;
    const context = {
      workerIndex: message.workerIndex,
      workers: message.workers,
      barrier: () => {
        generation += 1;
        const mine = generation;
        return new Promise((resolve, reject) => {
          waiting.set(mine, () => resolve(undefined));
          send({ type: 'bulwark:barrier', generation: mine }).catch(reject);
        });
      },
    };
    void (async () => {
      try {
        const result = await scenario(message.input, context);
        await send({ type: 'bulwark:result', result });
        process.exit(0);
      } catch (error) {
        await send({ type: 'bulwark:error', error: serializeError(error) }).catch(() => {
          // The parent cannot get the error: leave it on stderr, which it captures.
          process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        });
        process.exit(1);
      }
    })();
  });
}
