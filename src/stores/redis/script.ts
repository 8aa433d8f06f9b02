/**
 * Lua scripts on Redis: loaded once per client, then called by SHA with `EVALSHA`; after a Redis
 * restart, failover or `SCRIPT FLUSH` the `NOSCRIPT` reply is answered by one `EVAL`, which both runs
 * the script and loads it again. `EVAL` is routed by key like `EVALSHA`, so this also works on Redis
 * Cluster, where each node has its own script cache.
 */
import { createHash } from 'node:crypto';

/** The part of an ioredis client (`Redis` or `Cluster`) that runs scripts. */
export interface ScriptClient {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/**
 * True for Redis's `NOSCRIPT` reply, matched tolerantly: with or without the `ERR ` prefix Redis 7
 * puts on some script errors, whatever the case, with leading spaces. (An exact `===` on the
 * message silently broke bottleneck on Redis 7.)
 */
export function isNoScriptError(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /^\s*(?:ERR\s+)?NOSCRIPT\b/i.test(message);
}

/** A Lua script and its SHA1. */
export class RedisScript {
  /** The script's SHA1, hex (what `EVALSHA` takes). */
  readonly sha: string;
  // Clients that have seen this script: the first call on a client sends the source (EVAL).
  private readonly loaded = new WeakSet<object>();

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Runs the script: `EVAL` the first time on this client, `EVALSHA` after; on `NOSCRIPT` (flushed
   * or restarted server) one `EVAL` that runs and reloads it. Callback style, so a decision costs no
   * promise beyond the client's own: `onReply` gets the reply, `onError` any other error.
   *
   * @param keysAndArgs the `numKeys` keys, then the arguments
   */
  send(
    client: ScriptClient,
    numKeys: number,
    keysAndArgs: readonly (string | number)[],
    onReply: (reply: unknown) => void,
    onError: (error: unknown) => void,
  ): void {
    if (!this.loaded.has(client)) {
      client.eval(this.source, numKeys, ...keysAndArgs).then((reply) => {
        this.loaded.add(client);
        onReply(reply);
      }, onError);
      return;
    }
    client.evalsha(this.sha, numKeys, ...keysAndArgs).then(onReply, (error: unknown) => {
      if (isNoScriptError(error)) client.eval(this.source, numKeys, ...keysAndArgs).then(onReply, onError);
      else onError(error);
    });
  }
}
