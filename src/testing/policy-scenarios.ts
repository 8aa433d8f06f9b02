/**
 * The scenarios of {@link policyConformance}, as data: each has a name, says which policies it
 * applies to, and runs on a {@link Bench}. Internal to `bulwark/testing`.
 */
import { classify } from '../core/classify.js';
import { setListenerErrorHandler } from '../core/events.js';
import { type Bench, describeValue, fail, type PolicyUnderTest, recorded } from './policy-bench.js';
import {
  abortMidCall,
  type Case,
  deadline,
  failing,
  preAborted,
  refusal,
  settlingCases,
  value,
} from './policy-cases.js';

/** What a policy offers, read once from a policy built for the purpose. */
export interface Capabilities {
  /** Its `on*` subscription methods. */
  readonly listeners: readonly string[];
  /** It has the uniform events (`onSuccess`, `onFailure`; `onRejected` too if it refuses). */
  readonly uniformEvents: boolean;
  /** It declared `refuse`. */
  readonly refuses: boolean;
}

/** One invariant of the contract: its name, the policies it applies to (default all), its check. */
export interface Scenario {
  readonly name: string;
  readonly applies?: (capabilities: Capabilities) => boolean;
  run(bench: Bench): Promise<void>;
}

type Methods = Record<string, unknown>;

/** What the policy under test offers: its `on*` methods (own or inherited) and a declared `refuse`. */
export function capabilitiesOf(subject: PolicyUnderTest): Capabilities {
  const listeners = new Set<string>();
  for (
    let o: object | null = subject.policy;
    o !== null && o !== Object.prototype;
    o = Object.getPrototypeOf(o)
  ) {
    for (const key of Object.getOwnPropertyNames(o)) {
      if (/^on[A-Z]/.test(key) && typeof (subject.policy as unknown as Methods)[key] === 'function')
        listeners.add(key);
    }
  }
  return {
    listeners: [...listeners].sort(),
    uniformEvents: listeners.has('onSuccess') && listeners.has('onFailure'),
    refuses: subject.refuse !== undefined,
  };
}

/** Subscribes `listener` with `policy[method]`, returning its disposer. */
function subscribe(bench: Bench, method: string, listener: (event: unknown) => void): () => void {
  const disposer = ((bench.subject.policy as unknown as Methods)[method] as (l: unknown) => unknown).call(
    bench.subject.policy,
    listener,
  );
  if (typeof disposer !== 'function')
    fail(`${method}(listener) returned ${describeValue(disposer)}, not a disposer`);
  return disposer as () => void;
}

/** Runs cases, each on a fresh caller signal. */
async function runCases(
  bench: Bench,
  cases: readonly Case[],
  after?: (c: Case, signal: AbortSignal, holders: number) => Promise<void>,
): Promise<void> {
  for (const c of cases) {
    const controller = new AbortController();
    const holders = await c.run(bench, controller);
    await after?.(c, controller.signal, holders);
  }
}

/** A bad argument: a `TypeError` rejection, the operation never runs, no timer set, the next call served. */
async function refusedArgument(
  bench: Bench,
  what: string,
  operation: unknown,
  options: unknown,
): Promise<void> {
  const ran = recorded(() => 'value');
  const op = typeof operation === 'function' ? ran.operation : operation;
  const call = await bench.settle(op as never, options as never, what);
  bench.rejectedWithTypeError(call, what);
  if (ran.contexts.length > 0) fail(`${what}: the operation ran`);
  await bench.nothingLeft(undefined, what);
}

/** The shape of an event: exactly these keys. */
function shape(event: unknown, keys: readonly string[], what: string): Record<string, unknown> {
  if (typeof event !== 'object' || event === null) fail(`${what}: the event is ${describeValue(event)}`);
  const got = Object.keys(event).sort().join(', ');
  if (got !== [...keys].sort().join(', '))
    fail(`${what}: expected the keys { ${keys.join(', ')} }, got { ${got} }`);
  const fields = event as Record<string, unknown>;
  if (typeof fields.policy !== 'string' || fields.policy === '')
    fail(`${what}: "policy" must be the policy's name, got ${describeValue(fields.policy)}`);
  return fields;
}

/** Records the uniform events of the policy while `body` runs. */
async function withEvents(
  bench: Bench,
  body: (log: Record<string, unknown[]>) => Promise<void>,
): Promise<void> {
  const log: Record<string, unknown[]> = { onSuccess: [], onFailure: [], onRejected: [] };
  const disposers = Object.keys(log)
    .filter((method) => typeof (bench.subject.policy as unknown as Methods)[method] === 'function')
    .map((method) => subscribe(bench, method, (event) => log[method]!.push(event)));
  try {
    await body(log);
  } finally {
    for (const dispose of disposers) dispose();
  }
}

function count(log: Record<string, unknown[]>, method: string, expected: number, what: string): void {
  const got = log[method]!.length;
  if (got !== expected) fail(`${what}: ${method} fired ${got} time(s), expected ${expected}`);
  log[method]!.length = 0;
}

function duration(fields: Record<string, unknown>, expected: number, what: string): void {
  if (fields.durationMs !== expected)
    fail(
      `${what}: durationMs is ${describeValue(fields.durationMs)}, expected ${expected} (the call's time on the clock)`,
    );
}

const serves = (bench: Bench, what: string) =>
  runCases(bench, [value(false)]).catch((error: unknown) => {
    fail(`${what}: the next call was not served (${describeValue(error)})`);
  });

/** Every scenario, in the order they are registered. */
export const scenarios: readonly Scenario[] = [
  {
    name: 'an already-aborted signal rejects with its reason; the operation never runs',
    run: (bench) => runCases(bench, [preAborted]),
  },
  {
    name: 'a signal that is not an AbortSignal is a TypeError rejection; nothing runs, the next call is served',
    async run(bench) {
      for (const [label, signal] of [
        ['{ aborted: false }', { aborted: false }],
        ['null', null],
        ['an AbortController', new AbortController()],
      ] as const) {
        await refusedArgument(bench, `signal: ${label}`, () => 'value', { signal });
      }
      await serves(bench, 'after the bad signals');
    },
  },
  {
    name: 'an operation that is not a function is a TypeError rejection; the next call is served',
    async run(bench) {
      for (const operation of [42, undefined, 'operation'])
        await refusedArgument(bench, `operation: ${describeValue(operation)}`, operation, undefined);
      await serves(bench, 'after the bad operations');
    },
  },
  {
    name: "resolves with the operation's value (returned at once, and after 30 ms)",
    run: (bench) => runCases(bench, [value(false), value(true)]),
  },
  {
    name: "a synchronous throw rejects with the operation's error (or the declared unwrap/recovery)",
    run: (bench) => runCases(bench, [failing(true)]),
  },
  {
    name: "an asynchronous rejection rejects with the operation's error (or the declared unwrap/recovery)",
    run: (bench) => runCases(bench, [failing(false)]),
  },
  {
    name: "an abort mid-call reaches the operation's signal at once; the call rejects with the caller's reason",
    run: (bench) => runCases(bench, [abortMidCall]),
  },
  {
    name: "a caller's deadline reaches the operation, and ends the call by then unless declared not enforced",
    run: (bench) => runCases(bench, [deadline]),
  },
  {
    name: "leaves no abort listener on the caller's signal and no live timer after any call settles",
    run: (bench) =>
      runCases(bench, settlingCases, (c, signal, holders) => bench.nothingLeft(signal, c.what, holders)),
  },
  {
    name: 'a refusal rejects without running the operation and leaves nothing behind',
    applies: (c) => c.refuses,
    run: (bench) =>
      runCases(bench, [refusal], (c, signal, holders) => bench.nothingLeft(signal, c.what, holders)),
  },
  {
    name: 'a throwing listener (on every on* subscription) never breaks a call',
    applies: (c) => c.listeners.length > 0,
    async run(bench) {
      const { listeners } = capabilitiesOf(bench.subject);
      const thrown = new Error('policy conformance: a listener threw');
      const disposers = listeners.map((method) =>
        subscribe(bench, method, () => {
          throw thrown;
        }),
      );
      const previous = setListenerErrorHandler(() => {});
      try {
        const cases = [value(false), value(true), failing(true), failing(false), abortMidCall];
        if (bench.subject.refuse !== undefined) cases.push(refusal);
        await runCases(bench, cases).catch((error: unknown) => {
          const broke =
            error instanceof Error
              ? error.message.replace(/^policy conformance: /, '')
              : describeValue(error);
          fail(`with a throwing listener on ${listeners.join(', ')}: ${broke}`);
        });
      } finally {
        setListenerErrorHandler(previous);
        for (const dispose of disposers) dispose();
      }
    },
  },
  {
    name: 'onSuccess({ policy, durationMs }) fires once per call that resolves, with exactly that shape',
    applies: (c) => c.uniformEvents,
    run: (bench) =>
      withEvents(bench, async (log) => {
        for (const [c, ms] of [
          [value(false), 0],
          [value(true), 30],
        ] as const) {
          await runCases(bench, [c]);
          const event = log.onSuccess![0];
          count(log, 'onSuccess', 1, c.what);
          count(log, 'onFailure', 0, c.what);
          duration(
            shape(event, ['policy', 'durationMs'], `onSuccess for ${c.what}`),
            ms,
            `onSuccess for ${c.what}`,
          );
        }
      }),
  },
  {
    name: 'onFailure({ policy, error, kind, durationMs, handled }) fires once per call that fails, with exactly that shape',
    applies: (c) => c.uniformEvents,
    run: (bench) =>
      withEvents(bench, async (log) => {
        for (const c of [failing(true), failing(false)]) {
          const startedAt = bench.clock.now();
          await runCases(bench, [c]);
          const what = `onFailure for ${c.what}`;
          const event = log.onFailure![0];
          count(log, 'onFailure', 1, c.what);
          count(log, 'onSuccess', 0, c.what);
          const fields = shape(event, ['policy', 'error', 'kind', 'durationMs', 'handled'], what);
          if (!(fields.error instanceof Error)) fail(`${what}: "error" is ${describeValue(fields.error)}`);
          const call = bench.latestCall!;
          const unwrap = bench.subject.unwrap ?? ((error: unknown) => error);
          if (!call.fulfilled && fields.error !== call.reason && fields.error !== unwrap(call.reason))
            fail(`${what}: "error" is ${describeValue(fields.error)}, not what the call rejected with`);
          if (fields.kind !== classify(fields.error))
            fail(
              `${what}: "kind" is ${describeValue(fields.kind)}, classify(error) is ${describeValue(classify(fields.error))}`,
            );
          if (typeof fields.handled !== 'boolean')
            fail(`${what}: "handled" is ${describeValue(fields.handled)}, not a boolean`);
          duration(fields, bench.clock.now() - startedAt, what);
        }
      }),
  },
  {
    name: 'onRejected({ policy, reason, error }) fires once per refusal, with exactly that shape',
    applies: (c) => c.refuses && c.uniformEvents,
    run: (bench) =>
      withEvents(bench, async (log) => {
        if (typeof (bench.subject.policy as unknown as Methods).onRejected !== 'function')
          fail('the policy refuses calls but has no onRejected');
        await runCases(bench, [refusal]);
        const event = log.onRejected![0];
        count(log, 'onRejected', 1, refusal.what);
        const fields = shape(event, ['policy', 'reason', 'error'], `onRejected for ${refusal.what}`);
        if (typeof fields.reason !== 'string' || fields.reason === '')
          fail(`onRejected: "reason" is ${describeValue(fields.reason)}, not a non-empty string`);
        if (fields.error !== bench.latestCall!.reason)
          fail(`onRejected: "error" is ${describeValue(fields.error)}, not what the call rejected with`);
      }),
  },
];
