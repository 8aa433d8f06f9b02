/**
 * A remote cache layer in memory, on a `FakeClock`: the contract of `cache/store.ts` (it passes
 * `cacheLayerConformance`), for unit tests of the cache's own logic with time under control. Many
 * caches may share one `FakeRemote` (as processes share one Redis); each `layer()` is a client of
 * it, which can be made to fail or hang, have a reply held back, and whose subscription can be
 * broken and restored.
 */
import type { RemoteCacheEntry, RemoteCacheLayer } from '../../src/cache/store.js';
import { StoreUnavailableError } from '../../src/core/errors.js';
import type { FakeClock } from '../../src/testing/fake-clock.js';

interface Stored {
  readonly payload: string;
  readonly graceMs: number;
  readonly endsAt: number;
}

/** One client of a {@link FakeRemote}. */
export interface FakeRemoteLayer extends RemoteCacheLayer {
  /** `'fail'`: every call rejects with `StoreUnavailableError`; `'hang'`: never settles. */
  mode: 'ok' | 'fail' | 'hang';
  /** Calls made, by operation. */
  readonly calls: Record<string, number>;
  /** Breaks the subscription (messages published meanwhile are lost), then restores it (reset). */
  breakSubscription(): () => void;
  /**
   * Holds back the reply of the next `operation` call: it runs on the server at once (so it sees
   * the state of then), but its caller hears of it only once the returned function is called.
   */
  holdReply(operation: string): () => void;
}

/** The shared server of fake remote layers. */
export class FakeRemote {
  readonly entries = new Map<string, Stored>();
  readonly versions = new Map<string, number>();
  readonly claims = new Map<string, { owner: string; endsAt: number }>();
  private readonly subscribers = new Set<{ live: boolean; onMessage: (m: string) => void }>();

  constructor(private readonly clock: FakeClock) {}

  /** A new client of this server. */
  layer(): FakeRemoteLayer {
    const server = this;
    const clock = this.clock;
    const mine = new Set<{ live: boolean; onMessage: (m: string) => void; onReset: () => void }>();
    const held = new Map<string, Promise<void>>();
    const layer: FakeRemoteLayer = {
      kind: 'remote',
      timeoutMs: 100,
      mode: 'ok',
      calls: {},
      get: (key) =>
        run('get', () => {
          const stored = server.entries.get(key);
          const remainingMs = stored === undefined ? 0 : stored.endsAt - clock.now();
          if (stored === undefined || remainingMs <= 0) return undefined;
          return { payload: stored.payload, graceMs: stored.graceMs, remainingMs } satisfies RemoteCacheEntry;
        }),
      set: (key, payload, ttlMs, graceMs, message) =>
        run('set', () => {
          server.entries.set(key, { payload, graceMs, endsAt: clock.now() + ttlMs + graceMs });
          if (message !== undefined) server.publish(message);
        }),
      delete: (key, message) =>
        run('delete', () => {
          server.entries.delete(key);
          if (message !== undefined) server.publish(message);
        }),
      version: (namespace) => run('version', () => server.versions.get(namespace) ?? 0),
      bumpVersion: (namespace, message) =>
        run('bumpVersion', () => {
          const version = (server.versions.get(namespace) ?? 0) + 1;
          server.versions.set(namespace, version);
          if (message !== undefined) server.publish(message);
          return version;
        }),
      claimLoad: (key, owner, ttlMs) =>
        run('claimLoad', () => {
          const claim = server.claims.get(key);
          if (claim !== undefined && claim.endsAt > clock.now()) return false;
          server.claims.set(key, { owner, endsAt: clock.now() + ttlMs });
          return true;
        }),
      releaseLoad: (key, owner) =>
        run('releaseLoad', () => {
          if (server.claims.get(key)?.owner === owner) server.claims.delete(key);
        }),
      subscribe(onMessage, onReset) {
        const subscriber = { live: true, onMessage, onReset };
        mine.add(subscriber);
        server.subscribers.add(subscriber);
        return () => {
          mine.delete(subscriber);
          server.subscribers.delete(subscriber);
        };
      },
      breakSubscription() {
        for (const s of mine) s.live = false;
        return () => {
          for (const s of mine) {
            s.live = true;
            s.onReset();
          }
        };
      },
      holdReply(operation) {
        let release!: () => void;
        held.set(operation, new Promise<void>((resolve) => (release = resolve)));
        return release;
      },
    };
    function run<T>(operation: string, body: () => T): Promise<T> {
      layer.calls[operation] = (layer.calls[operation] ?? 0) + 1;
      if (layer.mode === 'hang') return new Promise(() => {});
      if (layer.mode === 'fail')
        return Promise.reject(new StoreUnavailableError('fake remote layer is down'));
      let answer: () => Promise<T>;
      try {
        const value = body();
        answer = () => Promise.resolve(value);
      } catch (error) {
        answer = () => Promise.reject(error);
      }
      const hold = held.get(operation);
      if (hold === undefined) return answer();
      held.delete(operation);
      return hold.then(answer);
    }
    return layer;
  }

  /** Delivers `message` to every live subscriber, a tick later (as a bus does). */
  publish(message: string): void {
    for (const subscriber of [...this.subscribers]) {
      if (subscriber.live) queueMicrotask(() => subscriber.onMessage(message));
    }
  }
}
