/**
 * How a read-through cache uses its remote layer (L2): every call behind one circuit breaker (a
 * dead L2 is left alone for a while instead of costing every read its deadline), failures reported
 * and turned into misses, values encoded with the serializer, keys carrying the namespace's
 * version, and the messages that keep every process's L1 in step.
 */
import { randomUUID } from 'node:crypto';
import type { CircuitBreakerPolicy } from '../circuit-breaker/circuit-breaker.js';
import { circuitBreaker } from '../circuit-breaker/circuit-breaker.js';
import { isCircuitOpenError } from '../circuit-breaker/errors.js';
import type { LayerErrorEvent, ReadCacheOptions } from './options.js';
import type { RemoteCacheLayer } from './store.js';

/** What an L2 read found: the value and what is left of its times, in ms. */
export interface RemoteHit {
  readonly value: unknown;
  /** ms until the TTL ends (≤ 0: stale, within grace). */
  readonly freshForMs: number;
  /** ms until the entry ends (> 0). */
  readonly remainingMs: number;
}

/** What a message from another process asks of this cache's L1. */
export interface RemoteEvents {
  /** Another process set or deleted `key` (of this cache's namespace). */
  key(key: string): void;
  /** This cache's namespace was cleared, now at `version`. */
  version(version: number): void;
  /** Messages may have been lost (the subscription came back after a break). */
  reset(): void;
}

/** Marks a payload holding a value, and the payload of a cached "not found". */
const VALUE = 'v';
const NOT_FOUND = 'n';
const SEP = '\u0000';

type Report = (operation: LayerErrorEvent['operation'], key: string, error: unknown) => void;

/** The remote layer as one cache uses it (see the module doc). */
export class RemoteTier {
  private readonly breaker: CircuitBreakerPolicy;
  /** This cache's id in its messages: its own messages are not news to it. */
  private readonly origin = randomUUID();
  private version: number | undefined;
  private versionRead: Promise<number> | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly layer: RemoteCacheLayer,
    private readonly o: ReadCacheOptions,
    private readonly report: Report,
    events: RemoteEvents,
  ) {
    this.breaker = circuitBreaker({
      name: `${o.name} remote layer`,
      failureThreshold: o.remoteFailureThreshold,
      resetTimeoutMs: o.remoteResetTimeoutMs,
      clock: o.clock,
    });
    this.unsubscribe = layer.subscribe(
      (message) => this.receive(message, events),
      () => {
        this.version = undefined;
        events.reset();
      },
    );
  }

  /** Reads `key`: a hit, or undefined for a miss, a failure (reported) or an undecodable entry. */
  async read(key: string): Promise<RemoteHit | undefined> {
    const entry = await this.call('get', key, async (k) => this.layer.get(k));
    if (entry === undefined) return undefined;
    let value: unknown;
    try {
      value = this.decode(entry.payload);
    } catch (error) {
      this.report('decode', key, error);
      return undefined;
    }
    return { value, freshForMs: entry.remainingMs - entry.graceMs, remainingMs: entry.remainingMs };
  }

  /**
   * Writes `value`; with `notify`, tells the other processes. Resolves true when written; a failure
   * is reported, and rethrown when `strict` (an explicit `set`), else swallowed (a fill).
   */
  async write(key: string, value: unknown, ttlMs: number, graceMs: number, notify: boolean, strict: boolean) {
    const payload = value === undefined ? NOT_FOUND : VALUE + this.o.serializer.serialize(value);
    const message = notify ? this.message('k', key) : undefined;
    return this.call('set', key, (k) => this.layer.set(k, payload, ttlMs, graceMs, message), strict);
  }

  /** Deletes `key` everywhere and tells the other processes; rejects when L2 fails (reported). */
  async delete(key: string): Promise<void> {
    await this.call('delete', key, (k) => this.layer.delete(k, this.message('k', key)), true);
  }

  /** Clears `namespace`: bumps its version and tells the other processes; rejects when L2 fails. */
  async clear(namespace: string): Promise<void> {
    const version = await this.guard('clear', namespace, () =>
      this.layer.bumpVersion(namespace, (v) => [this.origin, 'v', namespace, String(v)].join(SEP)),
    );
    if (namespace === this.o.namespace && version !== undefined) this.version = version;
  }

  /** Claims `key`'s load for the fleet; true when claimed or when L2 cannot tell (load anyway). */
  async claim(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const claimed = await this.call('claim', key, (k) => this.layer.claimLoad(k, owner, ttlMs));
    return claimed !== false;
  }

  /** Ends a claim; failures are reported only (the claim expires anyway). */
  release(key: string, owner: string): void {
    this.call('claim', key, (k) => this.layer.releaseLoad(k, owner)).catch(() => {});
  }

  /** Stops listening to the other processes. */
  close(): void {
    this.unsubscribe();
  }

  /**
   * Runs `op` on `key`'s L2 key behind the breaker. A failure is reported (an open breaker only
   * refuses: it was reported as it opened) and resolves undefined, or rejects when `strict`.
   */
  private async call<T>(
    operation: LayerErrorEvent['operation'],
    key: string,
    op: (remoteKey: string) => Promise<T>,
    strict = false,
  ): Promise<T | undefined> {
    return this.guard(operation, key, async () => op(await this.keyOf(key)), strict);
  }

  private async guard<T>(
    operation: LayerErrorEvent['operation'],
    key: string,
    op: () => Promise<T>,
    strict = true,
  ): Promise<T | undefined> {
    try {
      return await this.breaker.execute(op);
    } catch (error) {
      if (!isCircuitOpenError(error)) this.report(operation, key, error);
      if (strict) throw error;
      return undefined;
    }
  }

  /** `key`'s L2 key: the namespace, its version and the key (NUL-separated). */
  private async keyOf(key: string): Promise<string> {
    const version = this.version ?? (await this.readVersion());
    return `${this.o.namespace}${SEP}${version}${SEP}${key}`;
  }

  private readVersion(): Promise<number> {
    this.versionRead ??= this.layer.version(this.o.namespace).then(
      (version) => {
        this.versionRead = undefined;
        // A clear seen meanwhile may already have set a newer one.
        this.version = Math.max(version, this.version ?? 0);
        return this.version;
      },
      (error: unknown) => {
        this.versionRead = undefined;
        throw error;
      },
    );
    return this.versionRead;
  }

  private message(type: 'k', key: string): string {
    return [this.origin, type, this.o.namespace, key].join(SEP);
  }

  private receive(message: string, events: RemoteEvents): void {
    const [origin, type, namespace] = message.split(SEP, 3);
    if (origin === this.origin || namespace !== this.o.namespace) return;
    const rest = message.slice(origin!.length + type!.length + namespace.length + 3);
    if (type === 'k') events.key(rest);
    else if (type === 'v') {
      const version = Number(rest);
      if (!Number.isSafeInteger(version)) return;
      this.version = Math.max(version, this.version ?? 0);
      events.version(version);
    }
  }

  private decode(payload: string): unknown {
    if (payload === NOT_FOUND) return undefined;
    if (!payload.startsWith(VALUE))
      throw new TypeError(`not a payload of this cache: ${payload.slice(0, 40)}`);
    return this.o.serializer.deserialize(payload.slice(1));
  }
}
