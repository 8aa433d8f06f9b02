import type {
  RateLimitAlgorithm,
  RateLimitResult,
  RateLimitRule,
  RateLimitStore,
} from '../../rate-limit/store.js';
import type { StoreDeadline } from './deadline.js';
import { gcraScript, slidingWindowScript, tokenBucketScript } from './rate-limit-scripts.js';
import { RedisScript, type ScriptClient } from './script.js';

const scripts: Readonly<Record<RateLimitAlgorithm, RedisScript>> = {
  gcra: new RedisScript(gcraScript),
  'token-bucket': new RedisScript(tokenBucketScript),
  'sliding-window': new RedisScript(slidingWindowScript),
};

/** A rule prepared for Redis: its script, key prefix and argument strings. */
interface Compiled {
  readonly script: RedisScript;
  /** `<prefix>rl:<name>:{` — the user's key and `}` follow, making the key its own hash tag. */
  readonly keyHead: string;
  /** The script's arguments after the cost. */
  readonly args: readonly string[];
}

/** A client the rate-limit store can use: runs scripts, deletes keys, reports its status. */
export interface RateLimitRedisClient extends ScriptClient {
  del(...keys: string[]): Promise<number>;
  readonly status?: string;
}

/**
 * The Redis rate-limit store (`redisStores(client).rateLimit`): one round trip per decision, a Lua
 * script run with `EVALSHA` (reloaded on `NOSCRIPT`), time from the server's `TIME`, one key per
 * limiter and key (`<prefix>rl:<name>:{<key>}`, its own hash tag, so Redis Cluster routes it), expiring
 * with `PX` once it is back at full capacity. Every call has the store deadline (`timeoutMs`, default
 * 100 ms) and fails with `StoreUnavailableError`; the limiter's `onStoreError` decides what that
 * means.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly synchronous = false;
  private readonly compiled = new WeakMap<RateLimitRule, Compiled>();

  /** Use `redisStores(client, options).rateLimit`. */
  constructor(
    private readonly client: RateLimitRedisClient,
    private readonly prefix: string,
    private readonly deadline: StoreDeadline,
  ) {}

  take(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.decide(key, cost, rule);
  }

  peek(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    return this.decide(key, 0, rule);
  }

  reset(key: string, rule: RateLimitRule): Promise<void> {
    const redisKey = `${this.compile(rule).keyHead}${key}}`;
    return this.deadline.run(this.client, () => this.client.del(redisKey)).then(() => undefined);
  }

  /** The Redis key holding `key`'s state under `rule` (for tests and operations). */
  keyOf(key: string, rule: RateLimitRule): string {
    return `${this.compile(rule).keyHead}${key}}`;
  }

  private decide(key: string, cost: number, rule: RateLimitRule): Promise<RateLimitResult> {
    const c = this.compile(rule);
    const client = this.client;
    const deadline = this.deadline;
    // One promise per decision: the deadline ticket and the script reply meet in its executor.
    return new Promise<RateLimitResult>((resolve, reject) => {
      const ticket = deadline.begin(client, reject);
      if (ticket === undefined) return;
      c.script.send(
        client,
        1,
        [`${c.keyHead}${key}}`, cost, ...c.args],
        (reply) => {
          if (!ticket.release()) return; // late: the caller already has its StoreUnavailableError
          const result = toResult(reply, rule.burst);
          if (result === undefined)
            reject(
              deadline.failure(new TypeError(`unexpected rate-limit script reply: ${JSON.stringify(reply)}`)),
            );
          else resolve(result);
        },
        (error) => {
          if (ticket.release()) reject(deadline.failure(error));
        },
      );
    });
  }

  private compile(rule: RateLimitRule): Compiled {
    let c = this.compiled.get(rule);
    if (c === undefined) {
      const { algorithm, limit, periodMs, burst, buckets } = rule;
      c = {
        script: scripts[algorithm],
        keyHead: `${this.prefix}rl:${rule.name}:{`,
        args:
          algorithm === 'gcra'
            ? // The emission interval and tau, computed exactly as gcra.ts computes them.
              [String(periodMs / limit), String((burst * periodMs) / limit)]
            : [String(limit), String(periodMs), String(burst), String(buckets)],
      };
      this.compiled.set(rule, c);
    }
    return c;
  }
}

/** The script's reply {remaining, retryAfterMs, resetMs} as a result (retryAfterMs 0 = allowed). */
function toResult(reply: unknown, limit: number): RateLimitResult | undefined {
  if (!Array.isArray(reply) || reply.length !== 3) return undefined;
  const [remaining, retryAfterMs, resetMs] = reply as unknown[];
  if (typeof remaining !== 'number' || typeof retryAfterMs !== 'number' || typeof resetMs !== 'number') {
    return undefined;
  }
  return { allowed: retryAfterMs === 0, remaining, retryAfterMs, resetMs, limit };
}
