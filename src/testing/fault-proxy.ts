/**
 * `faultProxy`: a small TCP proxy to put between a client and a real server (Redis, PostgreSQL,
 * an HTTP service) and add latency, black-hole the connection, cut it or refuse new ones, so a
 * test sees what its code does when the network misbehaves. Node only (`node:net`, loaded when a
 * proxy starts, so `bulwark/testing` itself loads anywhere), and on real timers: it moves real bytes.
 */
import {
  type Check,
  nonEmptyString,
  nonNegativeNumber,
  readOptions,
  required,
  type Schema,
  withDefault,
} from '../core/read-options.js';
import { show } from '../core/validate.js';
import { destroySocket, type LaneState, ProxiedConnection, type ProxyDirection } from './fault-proxy-lane.js';

export type { ProxyDirection } from './fault-proxy-lane.js';

/** Options of {@link faultProxy}. */
export interface FaultProxyOptions {
  /** The real server to forward to. Required. */
  readonly target: { readonly host: string; readonly port: number };
  /** The interface to listen on. @default '127.0.0.1' */
  readonly host?: string | undefined;
  /** Latency added to every chunk in both directions from the start, in ms. @default 0 */
  readonly latencyMs?: number | undefined;
}

/** Options of {@link FaultProxy.cut}. */
export interface ProxyCutOptions {
  /** Send a TCP RST (the peer sees `ECONNRESET`) instead of a FIN. @default false */
  readonly reset?: boolean | undefined;
}

/** A running fault proxy, from {@link faultProxy}. */
export interface FaultProxy {
  /** The address the proxy listens on. */
  readonly host: string;
  /** The ephemeral port the proxy listens on. */
  readonly port: number;
  /** Connections open now (each a client socket and its server socket). */
  readonly connections: number;
  /** Connections proxied since the start (refused ones not counted). */
  readonly accepted: number;
  /**
   * `base` with its host and port replaced by the proxy's:
   * `proxy.url('redis://127.0.0.1:6379/2')` is `redis://127.0.0.1:40123/2`.
   */
  url(base: string): string;
  /**
   * Delays each chunk that arrives from now on by `ms` in `direction`. Order is kept: a chunk
   * never overtakes one queued before it. Throws a `TypeError` for `ms` that is not a finite
   * number ≥ 0 or a bad `direction`.
   * @param direction - @default 'both'
   */
  setLatency(ms: number, direction?: ProxyDirection): void;
  /**
   * Black-holes `direction`: connections stay open and new ones are accepted, but bytes (and
   * closes) are held, not forwarded, until {@link FaultProxy.resume}. Pausing only `downstream`
   * lets the server execute a command whose reply the client never gets.
   * @param direction - @default 'both'
   */
  pause(direction?: ProxyDirection): void;
  /**
   * Forwards what was held in `direction`, in order, and goes on forwarding.
   * @param direction - @default 'both'
   */
  resume(direction?: ProxyDirection): void;
  /** Destroys every current connection on both sides at once, dropping anything held; new ones are accepted. */
  cut(options?: ProxyCutOptions): void;
  /** While `on`, new connections are reset at once (open ones are untouched). @param on - @default true */
  refuse(on?: boolean): void;
  /** Stops listening and destroys every connection and timer. Idempotent. */
  close(): Promise<void>;
}

const target: Check<FaultProxyOptions['target']> = (name, value) => {
  const t = value as { host?: unknown; port?: unknown } | null | undefined;
  if (
    typeof t?.host !== 'string' ||
    t.host === '' ||
    !Number.isInteger(t.port) ||
    (t.port as number) < 1 ||
    (t.port as number) > 65_535
  ) {
    throw new TypeError(
      `expected "${name}" to be { host, port } (a port from 1 to 65535), got ${describe(value)}`,
    );
  }
  return { host: t.host, port: t.port as number };
};

const faultProxySchema = {
  target: required(target),
  host: withDefault('127.0.0.1', nonEmptyString),
  latencyMs: withDefault(0, nonNegativeNumber),
} satisfies Schema<FaultProxyOptions>;

function describe(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : show(value);
}

function checkDirection(direction: unknown): ProxyDirection {
  if (direction !== 'both' && direction !== 'upstream' && direction !== 'downstream') {
    throw new TypeError(
      `expected "direction" to be 'both', 'upstream' or 'downstream', got ${show(direction)}`,
    );
  }
  return direction;
}

/**
 * Starts a fault proxy listening on `host` (default `127.0.0.1`) on an ephemeral port, forwarding
 * every connection to `target`. Bytes and closes travel through a FIFO per connection and
 * direction, so order is always kept: a chunk is forwarded no earlier than the latency after it
 * arrived, and a close (FIN or error) only after the data before it. Close it with
 * {@link FaultProxy.close} (in `afterEach`).
 *
 * Rejects with a `TypeError` naming the first bad or unknown option, and with the listen error
 * when the port cannot be bound.
 *
 * @example
 * const proxy = await faultProxy({ target: { host: '127.0.0.1', port: 6379 } });
 * const redis = new Redis(proxy.url('redis://127.0.0.1:6379'), { commandTimeout: 200 });
 * proxy.pause();               // the next command gets no reply: the store's deadline fires
 * proxy.resume();
 * proxy.setLatency(100, 'downstream');
 * await proxy.close();
 */
export async function faultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const o = readOptions('faultProxy options', options, faultProxySchema);
  const { host } = o;
  const net = await import('node:net');
  const states: { readonly upstream: LaneState; readonly downstream: LaneState } = {
    upstream: { latencyMs: o.latencyMs, paused: false },
    downstream: { latencyMs: o.latencyMs, paused: false },
  };
  const open = new Set<ProxiedConnection>();
  let accepted = 0;
  let refusing = false;
  let closing: Promise<void> | undefined;

  const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    if (refusing || closing !== undefined) {
      client.on('error', () => {});
      destroySocket(client, true);
      return;
    }
    accepted += 1;
    const upstream = net.connect({ host: o.target.host, port: o.target.port, allowHalfOpen: true });
    open.add(new ProxiedConnection(client, upstream, states, (connection) => open.delete(connection)));
  });
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('faultProxy: no TCP address');
  const port = address.port;

  const statesOf = (direction: ProxyDirection): LaneState[] => {
    checkDirection(direction);
    if (direction === 'upstream') return [states.upstream];
    if (direction === 'downstream') return [states.downstream];
    return [states.upstream, states.downstream];
  };
  const destroyAll = (reset: boolean): void => {
    const connections = [...open];
    open.clear();
    for (const connection of connections) connection.destroy(reset);
  };

  return {
    host,
    port,
    get connections() {
      return open.size;
    },
    get accepted() {
      return accepted;
    },
    url(base) {
      const url = new URL(base);
      url.hostname = host.includes(':') ? `[${host}]` : host;
      url.port = String(port);
      return url.toString();
    },
    setLatency(ms, direction = 'both') {
      nonNegativeNumber('latencyMs', ms);
      for (const state of statesOf(direction)) state.latencyMs = ms;
    },
    pause(direction = 'both') {
      for (const state of statesOf(direction)) state.paused = true;
    },
    resume(direction = 'both') {
      for (const state of statesOf(direction)) state.paused = false;
      for (const connection of open) for (const lane of connection.lanes(direction)) lane.pump();
    },
    cut(cutOptions = {}) {
      destroyAll(cutOptions.reset === true);
    },
    refuse(on = true) {
      refusing = on;
    },
    close() {
      if (closing === undefined) {
        closing = new Promise<void>((resolve) => server.close(() => resolve()));
        destroyAll(false);
      }
      return closing;
    },
  };
}
