import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from '../../rate-limit/store.js';
import type { StoreDeadline } from './deadline.js';
import { taggedKey } from './keys.js';
import { bySlot, type KeyPrefixOptions, MAX_BATCH, slotPrefixOf } from './rate-limit-batches.js';
import { type Compiled, type Group, Pending, resultOf } from './rate-limit-pending.js';
import { type AlgorithmScripts, rateLimitAllScript, rateLimitScripts } from './rate-limit-scripts.js';
import { RedisScript, type ScriptClient } from './script.js';
import { ScriptRunner } from './script-runner.js';

export { MAX_BATCH } from './rate-limit-batches.js';

type Scripts = { readonly [K in keyof AlgorithmScripts]: RedisScript };

const scripts: Readonly<Record<RateLimitAlgorithm, Scripts>> = {
  gcra: scriptsOf('gcra'),
  'token-bucket': scriptsOf('token-bucket'),
  'sliding-window': scriptsOf('sliding-window'),
};

function scriptsOf(algorithm: RateLimitAlgorithm): Scripts {
  const { single, batch, adjust, block } = rateLimitScripts[algorithm];
  return {
    single: new RedisScript(single),
    batch: new RedisScript(batch),
    adjust: new RedisScript(adjust),
    block: new RedisScript(block),
  };
}

const allScript = new RedisScript(rateLimitAllScript);

/** A client the rate-limit store can use: runs scripts, deletes keys, reports its status. */
export interface RateLimitRedisClient extends ScriptClient {
  del(...keys: string[]): Promise<number>;
  readonly status?: string | undefined;
  /**
   * True for an ioredis `Cluster`: all keys of one script call must share a hash slot there, so its
   * decisions are batched per slot.
   */
  readonly isCluster?: boolean | undefined;
  /** The client's options: a `keyPrefix` there is part of every key sent, so of its slot. */
  readonly options?: KeyPrefixOptions | undefined;
}

/**
 * The Redis rate-limit store (`redisStores(client).rateLimit`): decisions made by a Lua script run
 * with `EVALSHA` (reloaded on `NOSCRIPT`), time from the server's `TIME`, one key per limiter and key
 * (`<prefix>rl:<name>:{<key>}`, its own hash tag, so Redis Cluster routes it), expiring with `PX`
 * once it is back at full capacity. Every decision has the store deadline (`timeoutMs`, default
 * 100 ms) and fails with `StoreUnavailableError`; the limiter's `storeFailure` mode decides what
 * that means.
 *
 * Decisions made in the same tick are coalesced: they are queued, and a microtask sends them as one
 * script call per rule group of up to {@link MAX_BATCH} keys, decided in order on the server; a
 * decision alone in its call is one single-key call. On a Redis Cluster a call's keys must share a
 * hash slot, so there a group's decisions are first split by the slot of their key (with the
 * client's `keyPrefix`, as Redis computes it); a standalone client never computes a slot. Each
 * decision keeps its own deadline, and a Redis error on one key (`WRONGTYPE`) fails that decision
 * only.
 *
 * Quota control (`adjust`, `block`) and combined limits (`takeAll`) are one script call each, sent
 * after the decisions already queued in the tick. A block lives in the key's own value, so a take
 * reads it with the state in one `GET`, and `reset` (`DEL`) lifts it.
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
  /** On a Cluster, the client's `keyPrefix` (`''` if none): the slot is of it + the key. */
  private readonly slotPrefix: string | undefined;
  private readonly runner: ScriptRunner;

  /** Use `redisStores(client, options).rateLimit`. */
  constructor(
    private readonly client: RateLimitRedisClient,
    private readonly prefix: string,
    private readonly deadline: StoreDeadline,
  ) {
    this.slotPrefix = slotPrefixOf(client);
    this.runner = new ScriptRunner(client, deadline);
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

  /** Moves `key`'s quota by `units` in one script call (see `RateLimitStore.adjust`). */
  adjust(key: string, units: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.alter(key, 'adjust', units, rule);
  }

  /** Blocks `key` for `ms` in one script call (see `RateLimitStore.block`). */
  block(key: string, ms: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.alter(key, 'block', ms, rule);
  }

  /**
   * Takes `cost` from `key` under every rule or none, in one script call over one state key per
   * rule (see `RateLimitStore.takeAll`). The keys differ only by limiter name, so they share the
   * user key's hash tag and one Redis Cluster slot. Never batched with other decisions.
   */
  takeAll(key: string, cost: number, rules: readonly RateLimitRule[]): Promise<RateLimitResult[]> {
    const compiled = rules.map((rule) => this.compile(rule));
    this.flush();
    return this.runner.run(
      allScript,
      compiled.length,
      () => {
        const keys: (string | number)[] = compiled.map((c) => stateKey(c.keyHead, key));
        keys.push(cost);
        for (const { group } of compiled) keys.push(group.algorithm, ...group.args);
        return keys;
      },
      (reply) => {
        if (!Array.isArray(reply) || reply.length !== compiled.length) {
          throw this.deadline.failure(
            new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`),
          );
        }
        return compiled.map((c, i) => resultOf(reply[i], c.group.burst, this.deadline));
      },
    );
  }

  /**
   * The Redis key holding `key`'s state under `rule` (for tests and operations). Throws a
   * `TypeError` for a key that is not a non-empty, well-formed string.
   */
  keyOf(key: string, rule: RateLimitRule): string {
    return stateKey(this.compile(rule).keyHead, key);
  }

  /** Runs the `adjust` or `block` script of `rule` on `key` with `amount`, after the tick's takes. */
  private alter(
    key: string,
    script: 'adjust' | 'block',
    amount: number,
    rule: RateLimitRule,
  ): Promise<RateLimitResult> {
    const { keyHead, group } = this.compile(rule);
    // Decisions made before go out first, as they would without batching.
    this.flush();
    return this.runner.run(
      group[script],
      1,
      () => [stateKey(keyHead, key), amount, ...group.args],
      (reply) => resultOf(reply, group.burst, this.deadline),
    );
  }

  private decide(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    const c = this.compile(rule);
    return new Promise<RateLimitResult>((resolve, reject) => {
      // A bad key rejects this promise with its TypeError (thrown in the executor), before any call.
      const target = stateKey(c.keyHead, key);
      const ticket = this.deadline.begin(this.client, reject);
      if (ticket === undefined) return;
      const pending = new Pending(target, cost, ticket, resolve, reject);
      const group = c.group;
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

  /** Sends every pending decision: one call per group (and slot, on a Cluster) and MAX_BATCH decisions. */
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
      if (this.slotPrefix === undefined) this.sendRuns(group, pending);
      else for (const same of bySlot(pending, this.slotPrefix)) this.sendRuns(group, same);
    }
  };

  /** Sends `pending` (decisions of one group and slot) in calls of up to {@link MAX_BATCH}, in order. */
  private sendRuns(group: Group, pending: readonly Pending[]): void {
    for (let start = 0; start < pending.length; start += MAX_BATCH) {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the slice of a list of at most MAX_BATCH is the same decisions; this only saves the copy
      const chunk = pending.length <= MAX_BATCH ? pending : pending.slice(start, start + MAX_BATCH);
      if (chunk.length === 1) this.sendOne(group, chunk[0]!);
      else this.sendBatch(group, chunk);
    }
  }

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
        group = { algorithm, ...scripts[algorithm], args, burst, pending: [] };
        this.groups.set(id, group);
      }
      c = { keyHead: `${this.prefix}rl:${rule.name}:{`, group };
      this.compiled.set(rule, c);
    }
    return c;
  }
}

/** The Redis key of `key` under `keyHead` (`<prefix>rl:<name>:{`): see {@link taggedKey}. */
function stateKey(keyHead: string, key: string): string {
  return taggedKey(keyHead, key);
}
