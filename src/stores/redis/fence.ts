import { StaleFenceError } from '../../lock/errors.js';
import { fenceValue } from '../../lock/memory-store.js';
import type { FenceStore } from '../../lock/store.js';
import type { StoreDeadline } from './deadline.js';
import { highestScript, readScript, writeScript } from './fence-scripts.js';
import { redisKey } from './keys.js';
import { RedisScript } from './script.js';
import { ScriptRunner, type ScriptRunnerClient } from './script-runner.js';
import { replySafeInteger, replyText, text } from './values.js';

const writeLua = new RedisScript(writeScript);
const readLua = new RedisScript(readScript);
const highestLua = new RedisScript(highestScript);

/** A client the fence store can use: runs scripts and reports its status. */
export interface FenceRedisClient extends ScriptRunnerClient {}

/** What a resource holds: the value of the highest fence's last write. */
export interface FencedValue {
  /** The highest fence that wrote to the resource. */
  readonly fence: number;
  /** The value it wrote. */
  readonly value: string;
}

/**
 * Fenced values in Redis (`redisStores(client).fence`): the resource side of a `distributedLock()`.
 * `write(resource, fence, value)` checks the fence and writes the value in one script, so of two
 * writers the one with the lower fence can never write after the other: it refuses a fence lower
 * than the highest that wrote to `resource` (`StaleFenceError`, nothing written) and accepts the
 * same fence writing again. The value is the write itself, because a JavaScript callback cannot
 * run inside a script; keep in it what the lock protects (a JSON document, a counter) and read it
 * back with {@link read}.
 *
 * One hash per resource, `<prefix>fence:{<resource>}` (the resource is its own hash tag), with no
 * TTL: a resource's fence must outlive every lease of the locks that guard it, or a paused
 * holder's late write would find no fence to refuse it. Delete a resource's key yourself only once
 * no holder of an older fence can still be running.
 *
 * Resources are non-empty well-formed strings, fences non-negative safe integers (sent as decimal
 * text, so every one up to 2^53 − 1 round-trips exactly), values well-formed strings: a
 * `TypeError` otherwise, before any call. Every call has the store set's deadline (`timeoutMs`) and
 * fails with `StoreUnavailableError` when Redis fails, misses it, or replies out of shape.
 *
 * @example
 * const stores = redisStores(new Redis(process.env.REDIS_URL));
 * await distributedLock({ store: stores.lock }).withLock(`account:${id}`, async ({ fence }) => {
 *   const balance = Number((await stores.fence.read(`balance:${id}`))?.value ?? '0');
 *   await stores.fence.write(`balance:${id}`, fence, String(balance - amount));
 * });
 */
export class RedisFenceStore implements FenceStore {
  private readonly head: string;
  private readonly scripts: ScriptRunner;

  /** Use `redisStores(client, options).fence`. */
  constructor(client: FenceRedisClient, prefix: string, deadline: StoreDeadline) {
    this.scripts = new ScriptRunner(client, deadline);
    this.head = `${prefix}fence:{`;
  }

  /**
   * The Redis key holding `resource`'s fence and value, `<prefix>fence:{<resource>}`. Throws a
   * `TypeError` for a resource that is not a non-empty, well-formed string.
   */
  keyOf(resource: string): string {
    return redisKey(this.head, resource, 'resource');
  }

  /**
   * Writes `value` to `resource` if `fence` is not lower than the highest that wrote to it, and
   * records `fence` with it (one script). Resolves once written; rejects with `StaleFenceError`
   * (`highest` the fence that refused it; nothing written) for a lower fence,
   * `StoreUnavailableError` when Redis fails, and a `TypeError` for bad input.
   *
   * @example
   * await stores.fence.write('report:daily', fence, JSON.stringify(report));
   */
  write(resource: string, fence: number, value: string): Promise<void> {
    return this.scripts.run(
      writeLua,
      1,
      () => [this.keyOf(resource), String(fenceValue(fence)), text('value', value)],
      (reply) => {
        if (reply === 1) return;
        const highest = replySafeInteger(replyText(reply));
        if (highest === undefined || highest <= fence) throw this.scripts.unexpected('write', reply);
        throw new StaleFenceError(resource, fence, highest);
      },
    );
  }

  /**
   * The value of the last accepted write to `resource` and its fence, or `undefined` if none has
   * written. Rejects as {@link write} does (never with `StaleFenceError`).
   */
  read(resource: string): Promise<FencedValue | undefined> {
    return this.scripts.run(
      readLua,
      1,
      () => [this.keyOf(resource)],
      (reply) => {
        if (Array.isArray(reply) && reply.length === 2 && reply[0] === null && reply[1] === null)
          return undefined;
        const written = toFencedValue(reply);
        if (written === undefined) throw this.scripts.unexpected('read', reply);
        return written;
      },
    );
  }

  /** The highest fence that wrote to `resource`, or `undefined` if none has. See `FenceStore`. */
  highest(resource: string): Promise<number | undefined> {
    return this.scripts.run(
      highestLua,
      1,
      () => [this.keyOf(resource)],
      (reply) => {
        if (reply === null) return undefined;
        const fence = replySafeInteger(replyText(reply));
        if (fence === undefined) throw this.scripts.unexpected('highest', reply);
        return fence;
      },
    );
  }
}

/** The read script's `{f, v}` as a value, or undefined if malformed. */
function toFencedValue(reply: unknown): FencedValue | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const fence = replySafeInteger(replyText(reply[0]));
  const value = replyText(reply[1]);
  return fence === undefined || value === undefined ? undefined : { fence, value };
}
