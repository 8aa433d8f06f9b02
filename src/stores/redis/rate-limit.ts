import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from '../../rate-limit/store.js';
import type { DeadlineTicket, StoreDeadline } from './deadline.js';
import { redisKey } from './keys.js';
import { rateLimitScripts } from './rate-limit-scripts.js';
import { RedisScript, type ScriptClient } from './script.js';

/**
 * Most decisions in one batch script call. A script blocks Redis for its whole run (every other
 * client waits), so a batch must stay short: 32 GCRA decisions run ~0.3 ms on the server (a sliding
 * window of 10 buckets ~3× that). Beyond ~16–32 keys the fixed cost of a call is already amortised
 * (measured with `INFO commandstats`: ~13.5 µs of server time for one key alone, ~8.4 µs per key in
 * a batch of 32, ~8.2 µs in one of 64), and more, smaller calls keep several in flight, so the
 * client prepares the next batch while Redis runs the current one.
 */
export const MAX_BATCH = 32;

const scripts: Readonly<Record<RateLimitAlgorithm, { single: RedisScript; batch: RedisScript }>> = {
  gcra: scriptsOf('gcra'),
  'token-bucket': scriptsOf('token-bucket'),
  'sliding-window': scriptsOf('sliding-window'),
};

function scriptsOf(algorithm: RateLimitAlgorithm): { single: RedisScript; batch: RedisScript } {
  const { single, batch } = rateLimitScripts[algorithm];
  return { single: new RedisScript(single), batch: new RedisScript(batch) };
}

/**
 * Decisions that can share a batch script call: same algorithm and same script arguments (keys of
 * any limiter name). Rules with equal parameters share one group.
 */
interface Group {
  readonly single: RedisScript;
  readonly batch: RedisScript;
  /** The scripts' arguments after the key(s) and cost(s). */
  readonly args: readonly string[];
  /** The rule's `burst`: the `limit` of every result. */
  readonly burst: number;
  /** Decisions waiting for this tick's flush, in the order they were made. */
  pending: Pending[];
}

/** A rule prepared for Redis: its key prefix and its group. */
interface Compiled {
  /** `<prefix>rl:<name>:{` — the user's key and `}` follow, making the key its own hash tag. */
  readonly keyHead: string;
  readonly group: Group;
}

/** One decision in flight: its key, cost, deadline ticket and promise. */
class Pending {
  constructor(
    readonly key: string,
    readonly cost: number,
    readonly ticket: DeadlineTicket,
    private readonly resolve: (result: RateLimitResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  /** Settles with the script's reply for this key (a result, or a Redis error message). */
  reply(reply: unknown, group: Group, deadline: StoreDeadline): void {
    if (!this.ticket.release()) return; // late: the caller already has its StoreUnavailableError
    const result = toResult(reply, group.burst);
    if (result !== undefined) this.resolve(result);
    else if (typeof reply === 'string') this.reject(deadline.failure(new Error(reply)));
    else
      this.reject(
        deadline.failure(new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`)),
      );
  }

  /** Fails with the call's error (unless the deadline already failed it). */
  fail(error: unknown, deadline: StoreDeadline): void {
    if (this.ticket.release()) this.reject(deadline.failure(error));
  }
}

/** A client the rate-limit store can use: runs scripts, deletes keys, reports its status. */
export interface RateLimitRedisClient extends ScriptClient {
  del(...keys: string[]): Promise<number>;
  readonly status?: string | undefined;
  /** True for an ioredis `Cluster`: its decisions are never batched (keys of different slots). */
  readonly isCluster?: boolean | undefined;
}

/**
 * The Redis rate-limit store (`redisStores(client).rateLimit`): decisions made by a Lua script run
 * with `EVALSHA` (reloaded on `NOSCRIPT`), time from the server's `TIME`, one key per limiter and key
 * (`<prefix>rl:<name>:{<key>}`, its own hash tag, so Redis Cluster routes it), expiring with `PX`
 * once it is back at full capacity. Every decision has the store deadline (`timeoutMs`, default
 * 100 ms) and fails with `StoreUnavailableError`; the limiter's `storeFailure` mode decides what
 * that means.
 *
 * Decisions made in the same tick are coalesced (on a standalone client, not a Cluster): they are
 * queued, and a microtask sends them as one script call per rule of up to {@link MAX_BATCH} keys,
 * decided in order on the server; a decision alone in its tick is one single-key call. Each
 * decision keeps its own deadline.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly compiled = new WeakMap<RateLimitRule, Compiled>();
  /**
   * Groups by algorithm and arguments, so that equal rules batch together: one per distinct rule
   * configuration seen, kept for the store's life (a few hundred bytes each; rules are made once per
   * limiter, not per call).
   */
  private readonly groups = new Map<string, Group>();
  /** Groups with pending decisions, in the order of their first one. */
  private dirty: Group[] = [];
  private scheduled = false;
  private readonly batching: boolean;

  /** Use `redisStores(client, options).rateLimit`. */
  constructor(
    private readonly client: RateLimitRedisClient,
    private readonly prefix: string,
    private readonly deadline: StoreDeadline,
  ) {
    this.batching = client.isCluster !== true;
  }

  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.decide(key, cost, rule);
  }

  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.decide(key, 0, rule);
  }

  reset(key: string, rule: RateLimitRule): Promise<void> {
    let stateKey: string;
    try {
      stateKey = this.keyOf(key, rule);
    } catch (error) {
      return Promise.reject(error);
    }
    // Decisions made before this reset go out before its DEL, as they would without batching.
    this.flush();
    return this.deadline.run(this.client, () => this.client.del(stateKey)).then(() => undefined);
  }

  /**
   * The Redis key holding `key`'s state under `rule` (for tests and operations). Throws a
   * `TypeError` for a key that is not a non-empty, well-formed string.
   */
  keyOf(key: string, rule: RateLimitRule): string {
    return redisKey(this.compile(rule).keyHead, key);
  }

  private decide(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    const c = this.compile(rule);
    return new Promise<RateLimitResult>((resolve, reject) => {
      // A bad key rejects this promise with its TypeError (thrown in the executor), before any call.
      const stateKey = redisKey(c.keyHead, key);
      const ticket = this.deadline.begin(this.client, reject);
      if (ticket === undefined) return;
      const pending = new Pending(stateKey, cost, ticket, resolve, reject);
      const group = c.group;
      if (!this.batching) {
        this.sendOne(group, pending);
        return;
      }
      // Stryker disable next-line ConditionalExpression: (true) a group listed twice is flushed once: the second time its pending list is already empty
      if (group.pending.length === 0) this.dirty.push(group);
      group.pending.push(pending);
      // Stryker disable next-line ConditionalExpression: (true) a flush per decision sends the same batches: the first sends the tick's decisions, the others find none
      if (!this.scheduled) {
        // Stryker disable next-line BooleanLiteral: (false) a flush per decision sends the same batches: the first sends the tick's decisions, the others find none
        this.scheduled = true;
        queueMicrotask(this.flush);
      }
    });
  }

  /** Sends every pending decision: one call per group and {@link MAX_BATCH} decisions. */
  private readonly flush = (): void => {
    this.scheduled = false;
    const groups = this.dirty;
    // Stryker disable next-line ConditionalExpression: (false) with no group the loop below sends nothing
    if (groups.length === 0) return;
    this.dirty = [];
    for (const group of groups) {
      // A decision whose deadline already passed is not sent.
      const pending = group.pending.filter((p) => !p.ticket.settled);
      group.pending = [];
      for (let start = 0; start < pending.length; start += MAX_BATCH) {
        // Stryker disable next-line ConditionalExpression,EqualityOperator: the slice of a list of at most MAX_BATCH is the same decisions; this only saves the copy
        const chunk = pending.length <= MAX_BATCH ? pending : pending.slice(start, start + MAX_BATCH);
        if (chunk.length === 1) this.sendOne(group, chunk[0]!);
        else this.sendBatch(group, chunk);
      }
    }
  };

  /** One decision alone: the single-key script. */
  private sendOne(group: Group, pending: Pending): void {
    const deadline = this.deadline;
    group.single.send(
      this.client,
      1,
      [pending.key, pending.cost, ...group.args],
      (reply) => pending.reply(reply, group, deadline),
      (error) => pending.fail(error, deadline),
    );
  }

  /** Several decisions: the batch script, keys and costs in order, one reply element per key. */
  private sendBatch(group: Group, batch: readonly Pending[]): void {
    const deadline = this.deadline;
    const n = batch.length;
    // Stryker disable next-line ArrayDeclaration: every index below 2n is assigned next; the size only preallocates
    const keysAndArgs: (string | number)[] = new Array(2 * n);
    for (let i = 0; i < n; i++) {
      keysAndArgs[i] = batch[i]!.key;
      keysAndArgs[n + i] = batch[i]!.cost;
    }
    for (const arg of group.args) keysAndArgs.push(arg);
    group.batch.send(
      this.client,
      n,
      keysAndArgs,
      (reply) => {
        if (Array.isArray(reply) && reply.length === n) {
          for (let i = 0; i < n; i++) batch[i]!.reply(reply[i], group, deadline);
        } else {
          const error = new TypeError(`unexpected rate-limit batch reply: ${JSON.stringify(reply)}`);
          for (const p of batch) p.fail(error, deadline);
        }
      },
      (error) => {
        for (const p of batch) p.fail(error, deadline);
      },
    );
  }

  private compile(rule: RateLimitRule): Compiled {
    let c = this.compiled.get(rule);
    // Stryker disable next-line ConditionalExpression: (true) compiling again finds the same group and builds the same key head; this only caches it
    if (c === undefined) {
      const { algorithm, limit, periodMs, burst, buckets } = rule;
      // String(number) is the shortest form that reads back as the same double in Lua.
      const args = [String(limit), String(periodMs), String(burst), String(buckets)];
      const id = `${algorithm} ${burst} ${args.join(' ')}`;
      let group = this.groups.get(id);
      if (group === undefined) {
        group = { ...scripts[algorithm], args, burst, pending: [] };
        this.groups.set(id, group);
      }
      c = { keyHead: `${this.prefix}rl:${rule.name}:{`, group };
      this.compiled.set(rule, c);
    }
    return c;
  }
}

/** A script reply {remaining, retryAfterMs, resetMs} as a result (retryAfterMs 0 = allowed). */
function toResult(reply: unknown, limit: number): RateLimitResult | undefined {
  if (!Array.isArray(reply) || reply.length !== 3) return undefined;
  const [remaining, retryAfterMs, resetMs] = reply as unknown[];
  if (typeof remaining !== 'number' || typeof retryAfterMs !== 'number' || typeof resetMs !== 'number') {
    return undefined;
  }
  return { allowed: retryAfterMs === 0, remaining, retryAfterMs, resetMs, limit };
}
