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
  /** Another process cleared this cache's namespace (its version is read again on the next L2 access). */
  version(): void;
  /** Messages may have been lost (the subscription came back after a break). */
  reset(): void;
}

/** Marks a payload holding a value, and the payload of a cached "not found". */
const VALUE = 'v';
// Stryker disable next-line StringLiteral: any text a value's payload cannot be (it starts with 'v') would do
const NOT_FOUND = 'n';
const SEP = '\u0000';

type Report = (operation: LayerErrorEvent['operation'], key: string, error: unknown) => void;

/** The remote layer as one cache uses it (see the module doc). */
export class RemoteTier {
  private readonly breaker: CircuitBreakerPolicy;
  /** This cache's id in its messages: its own messages are not news to it. */
  private readonly origin = randomUUID();
  /** The namespace's version as last known; undefined: read it (one `GET`) on the next L2 access. */
  private version: number | undefined;
  /** The read of the version in flight, shared by the L2 accesses that wait for it. */
  private versionRead: Promise<number> | undefined;
  /**
   * Counts the times the version was forgotten (another process's clear, a reset): a read or bump
   * begun before may have seen an older version than a read begun after, so it does not store it.
   */
  private generation = 0;
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
        this.forgetVersion();
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
    const message = notify ? this.message('k', this.o.namespace, key) : undefined;
    return this.call('set', key, (k) => this.layer.set(k, payload, ttlMs, graceMs, message), strict);
  }

  /** Deletes `key` everywhere and tells the other processes; rejects when L2 fails (reported). */
  async delete(key: string): Promise<void> {
    await this.call(
      'delete',
      key,
      (k) => this.layer.delete(k, this.message('k', this.o.namespace, key)),
      true,
    );
  }

  /**
   * Clears `namespace`: bumps its version and tells the other processes (`<origin> v <namespace>`:
   * they read the version again); rejects when L2 fails. The new version of this cache's own
   * namespace is kept, unless another process cleared it meanwhile (then it is read again).
   */
  async clear(namespace: string): Promise<void> {
    const generation = this.generation;
    const version = await this.guard('clear', namespace, () =>
      this.layer.bumpVersion(namespace, this.message('v', namespace)),
    );
    // A failed bump threw (guard is strict): the version is a number.
    if (namespace === this.o.namespace) this.keepVersion(version as number, generation);
  }

  /** Claims `key`'s load for the fleet; true when claimed or when L2 cannot tell (load anyway). */
  async claim(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const claimed = await this.call('claim', key, (k) => this.layer.claimLoad(k, owner, ttlMs));
    return claimed !== false;
  }

  /** Ends a claim; failures are reported only (the claim expires anyway). */
  release(key: string, owner: string): void {
    // Stryker disable next-line ArrowFunction: call() never rejects when not strict; the catch only guards the floating promise
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

  /**
   * Reads the version (one read in flight at a time). A read that ends after the version was
   * forgotten answers what it read to the accesses that waited for it, but keeps nothing: a later
   * read (begun after the forgetting) may see a newer version.
   */
  private readVersion(): Promise<number> {
    if (this.versionRead !== undefined) return this.versionRead;
    const generation = this.generation;
    this.versionRead = this.layer.version(this.o.namespace).then(
      (version) => {
        // Stryker disable next-line ConditionalExpression,EqualityOperator: a read kept is only asked while the version is unknown, and forgetting it drops the read too; an extra drop costs one more GET
        if (this.generation === generation) this.versionRead = undefined;
        return this.keepVersion(version, generation);
      },
      (error: unknown) => {
        // Stryker disable next-line ConditionalExpression: (true) dropping a newer read in flight costs one more GET, nothing else
        if (this.generation === generation) this.versionRead = undefined;
        throw error;
      },
    );
    return this.versionRead;
  }

  /**
   * Keeps `version`, read or bumped in `generation`, unless the version was forgotten since; within
   * one generation versions only grow (a clear of this cache may have kept a newer one than a read
   * begun before it). Returns the version to use.
   */
  private keepVersion(version: number, generation: number): number {
    if (this.generation !== generation) return version;
    this.version = Math.max(version, this.version ?? 0);
    return this.version;
  }

  /** Forgets the version: the next L2 access reads it again, and reads in flight keep nothing. */
  private forgetVersion(): void {
    // Stryker disable next-line UpdateOperator: (--) any change of the generation tells reads in flight that it changed
    this.generation++;
    this.version = undefined;
    this.versionRead = undefined;
  }

  /** A message to the other processes: `<origin> k <namespace> <key>`, or `<origin> v <namespace>`. */
  // Stryker disable next-line StringLiteral: a version message's last part is never read
  private message(type: 'k' | 'v', namespace: string, key = ''): string {
    return [this.origin, type, namespace, key].join(SEP);
  }

  private receive(message: string, events: RemoteEvents): void {
    const [origin, type, namespace] = message.split(SEP, 3);
    if (origin === this.origin || namespace !== this.o.namespace) return;
    if (type === 'k') events.key(message.slice(origin!.length + type.length + namespace.length + 3));
    else if (type === 'v') {
      this.forgetVersion();
      events.version();
    }
  }

  private decode(payload: string): unknown {
    if (payload === NOT_FOUND) return undefined;
    if (!payload.startsWith(VALUE))
      throw new TypeError(`not a payload of this cache: ${payload.slice(0, 40)}`);
    return this.o.serializer.deserialize(payload.slice(1));
  }
}
