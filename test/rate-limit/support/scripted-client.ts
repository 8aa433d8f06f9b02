/**
 * A Redis client for unit tests of the rate-limit store without Redis: its script calls are
 * recorded and answered by the test, its deletes recorded.
 */

/** One script call: `eval` or `evalsha`, its number of keys, then its keys and arguments. */
export interface Call {
  readonly method: string;
  readonly numKeys: number;
  readonly args: readonly (string | number)[];
}

/** A client whose script calls answer with `reply(call)` (an Error rejects). */
export function scriptedClient(reply: (call: Call) => unknown, extra: { isCluster?: boolean } = {}) {
  const calls: Call[] = [];
  const deleted: string[] = [];
  const answer = (method: string, numKeys: number, args: (string | number)[]) => {
    const call = { method, numKeys, args };
    calls.push(call);
    const value = reply(call);
    return value instanceof Error ? Promise.reject(value) : Promise.resolve(value);
  };
  const client = {
    status: 'ready',
    ...extra,
    eval: (_source: string, numKeys: number, ...args: (string | number)[]) => answer('eval', numKeys, args),
    evalsha: (_sha: string, numKeys: number, ...args: (string | number)[]) =>
      answer('evalsha', numKeys, args),
    del: (...keys: string[]) => {
      deleted.push(...keys);
      return Promise.resolve(keys.length);
    },
  };
  return { client: client as never, calls, deleted };
}
