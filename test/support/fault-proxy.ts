/**
 * A small TCP proxy of our own for chaos tests: put it between a client and a real Redis or
 * PostgreSQL and add latency, black-hole the connection, cut it or refuse new ones.
 *
 * Bytes and closes travel through a FIFO per connection and direction, so order is always kept:
 * a chunk is forwarded no earlier than `latency` after it arrived, and a close (FIN or error)
 * is forwarded only after the data that preceded it. This module uses real timers: it is test
 * infrastructure that works against real servers.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy({ target: redis.target });
 * const client = redis.client({ url: proxy.url(redis.url), commandTimeout: 200 });
 * proxy.pause();                                   // the next command gets no reply
 * await expect(client.ping()).rejects.toThrow(/timed out/i);
 * proxy.resume();
 * await proxy.close();
 * ```
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * Which way a fault applies: `upstream` is client → server, `downstream` is server → client.
 * Pausing only `downstream`, for instance, lets the server execute a command whose reply the
 * client never gets.
 */
export type Direction = 'both' | 'upstream' | 'downstream';

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** The real server to forward to. */
  readonly target: { readonly host: string; readonly port: number };
  /** Interface to listen on. @default '127.0.0.1' */
  readonly host?: string;
  /** Initial latency added to every chunk in both directions, in ms. @default 0 */
  readonly latencyMs?: number;
}

/** Options of {@link FaultProxy.cut}. */
export interface CutOptions {
  /** Send a TCP RST (the peer sees `ECONNRESET`) instead of a FIN. @default false */
  readonly reset?: boolean;
}

/** A running fault proxy from {@link startFaultProxy}. */
export interface FaultProxy {
  /** The address the proxy listens on. */
  readonly host: string;
  /** The ephemeral port the proxy listens on. */
  readonly port: number;
  /** Connections open now (each is a client socket plus its server socket). */
  readonly connections: number;
  /** Connections proxied since the start (refused ones not counted). */
  readonly accepted: number;
  /**
   * `base` with its host and port replaced by the proxy's, e.g.
   * `proxy.url('redis://127.0.0.1:6379/2')` → `redis://127.0.0.1:40123/2`.
   */
  url(base: string): string;
  /**
   * Delays each chunk that arrives from now on by `ms` in `direction` (order is preserved, so a
   * chunk never overtakes one queued before it).
   *
   * @param direction - @default 'both'
   * @throws TypeError when `ms` is not a finite number ≥ 0
   */
  setLatency(ms: number, direction?: Direction): void;
  /**
   * Black-holes `direction`: connections stay open and new ones are accepted, but bytes (and
   * closes) are held, not forwarded, until {@link FaultProxy.resume}.
   *
   * @param direction - @default 'both'
   */
  pause(direction?: Direction): void;
  /**
   * Forwards what was held in `direction`, in order, and goes on forwarding.
   *
   * @param direction - @default 'both'
   */
  resume(direction?: Direction): void;
  /**
   * Destroys every current connection on both sides at once, dropping anything held; new
   * connections are still accepted.
   */
  cut(options?: CutOptions): void;
  /** While `on`, new connections are reset at once (existing ones are untouched). @default true */
  refuse(on?: boolean): void;
  /** Stops listening and destroys every connection and timer. Idempotent. */
  close(): Promise<void>;
}

/** Bytes queued in one direction above which reading from its source pauses. */
const HIGH_WATER_BYTES = 1 << 20;

interface LaneState {
  latencyMs: number;
  paused: boolean;
}

type Item =
  | { readonly at: number; readonly kind: 'data'; readonly chunk: Buffer }
  | { readonly at: number; readonly kind: 'end' | 'destroy' };

/** One direction of one connection: a FIFO of chunks and closes from `from` to `to`. */
class Lane {
  #queue: Item[] = [];
  #bytes = 0;
  #timer: NodeJS.Timeout | undefined;
  #waitingDrain = false;
  #stopped = false;

  constructor(
    readonly from: net.Socket,
    readonly to: net.Socket,
    readonly state: LaneState,
  ) {}

  push(kind: 'end' | 'destroy'): void;
  push(kind: 'data', chunk: Buffer): void;
  push(kind: Item['kind'], chunk?: Buffer): void {
    if (this.#stopped) return;
    const at = performance.now() + this.state.latencyMs;
    if (kind === 'data' && chunk !== undefined) {
      this.#queue.push({ at, kind, chunk });
      this.#bytes += chunk.length;
      if (this.#bytes > HIGH_WATER_BYTES && !this.from.isPaused()) this.from.pause();
    } else if (kind !== 'data') {
      this.#queue.push({ at, kind });
    }
    this.pump();
  }

  pump(): void {
    if (this.#stopped || this.#timer !== undefined || this.#waitingDrain) return;
    while (this.#queue.length > 0) {
      if (this.state.paused) return;
      const head = this.#queue[0]!;
      const wait = head.at - performance.now();
      if (wait > 0) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.pump();
        }, Math.ceil(wait));
        return;
      }
      this.#queue.shift();
      if (head.kind === 'data') {
        this.#bytes -= head.chunk.length;
        if (this.#bytes <= HIGH_WATER_BYTES / 2 && this.from.isPaused() && !this.from.destroyed)
          this.from.resume();
        if (this.to.destroyed || this.to.writableEnded) continue;
        if (!this.to.write(head.chunk)) {
          this.#waitingDrain = true;
          this.to.once('drain', () => {
            this.#waitingDrain = false;
            this.pump();
          });
          return;
        }
      } else if (head.kind === 'end') {
        if (!this.to.destroyed && !this.to.writableEnded) this.to.end();
      } else if (this.to.writableLength > 0 && !this.to.destroyed) {
        // Deliver what is already written before closing, as the kernel would.
        if (!this.to.writableEnded) this.to.end();
        this.to.once('finish', () => this.to.destroy());
      } else {
        this.to.destroy();
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
    this.#bytes = 0;
  }
}

function destroySocket(socket: net.Socket, reset: boolean): void {
  if (reset && !socket.destroyed && !socket.connecting) {
    try {
      socket.resetAndDestroy();
      return;
    } catch {
      // Not resettable in this state: fall back to a plain destroy.
    }
  }
  socket.destroy();
}

class ProxiedConnection {
  readonly upstream: Lane;
  readonly downstream: Lane;
  #open = 2;

  constructor(
    readonly client: net.Socket,
    readonly server: net.Socket,
    states: { upstream: LaneState; downstream: LaneState },
    onClosed: (connection: ProxiedConnection) => void,
  ) {
    this.upstream = new Lane(client, server, states.upstream);
    this.downstream = new Lane(server, client, states.downstream);
    const wire = (socket: net.Socket, lane: Lane): void => {
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => lane.push('data', chunk));
      socket.on('end', () => lane.push('end'));
      // Errors are forwarded as a close (below); without a listener they would crash the run.
      socket.on('error', () => {});
      socket.on('close', () => {
        lane.push('destroy');
        this.#open -= 1;
        if (this.#open === 0) {
          this.upstream.stop();
          this.downstream.stop();
          onClosed(this);
        }
      });
    };
    wire(client, this.upstream);
    wire(server, this.downstream);
  }

  lanes(direction: Direction): Lane[] {
    if (direction === 'upstream') return [this.upstream];
    if (direction === 'downstream') return [this.downstream];
    return [this.upstream, this.downstream];
  }

  destroy(reset: boolean): void {
    this.upstream.stop();
    this.downstream.stop();
    destroySocket(this.client, reset);
    destroySocket(this.server, reset);
  }
}

function checkDirection(direction: Direction): void {
  if (direction !== 'both' && direction !== 'upstream' && direction !== 'downstream') {
    throw new TypeError(
      `expected "direction" to be 'both', 'upstream' or 'downstream', got ${String(direction)}`,
    );
  }
}

function checkLatency(ms: number): void {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new TypeError(`expected "latencyMs" to be a finite number >= 0, got ${String(ms)}`);
  }
}

/**
 * Starts a fault proxy on `127.0.0.1` (by default) on an ephemeral port, forwarding every
 * connection to `options.target`. Close it with {@link FaultProxy.close} (e.g. in `afterEach`).
 *
 * @throws TypeError on invalid options; rejects when the port cannot be bound
 * @example
 * ```ts
 * const proxy = await startFaultProxy({ target: { host: '127.0.0.1', port: 5432 } });
 * proxy.setLatency(100);
 * const pool = pg.pool({ connectionString: proxy.url(pg.url) });
 * ```
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const { target, host = '127.0.0.1', latencyMs = 0 } = options;
  if (typeof target?.host !== 'string' || !Number.isInteger(target.port) || target.port <= 0) {
    throw new TypeError(`expected "target" to be { host, port }, got ${JSON.stringify(target)}`);
  }
  checkLatency(latencyMs);

  const states = {
    upstream: { latencyMs, paused: false } satisfies LaneState,
    downstream: { latencyMs, paused: false } satisfies LaneState,
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
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
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
  if (address === null || typeof address === 'string') throw new Error('fault proxy: no TCP address');
  const port = address.port;

  const statesOf = (direction: Direction): LaneState[] => {
    checkDirection(direction);
    if (direction === 'upstream') return [states.upstream];
    if (direction === 'downstream') return [states.downstream];
    return [states.upstream, states.downstream];
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
    url(base: string): string {
      const url = new URL(base);
      url.hostname = host.includes(':') ? `[${host}]` : host;
      url.port = String(port);
      return url.toString();
    },
    setLatency(ms: number, direction: Direction = 'both'): void {
      checkLatency(ms);
      for (const state of statesOf(direction)) state.latencyMs = ms;
    },
    pause(direction: Direction = 'both'): void {
      for (const state of statesOf(direction)) state.paused = true;
    },
    resume(direction: Direction = 'both'): void {
      for (const state of statesOf(direction)) state.paused = false;
      for (const connection of open) for (const lane of connection.lanes(direction)) lane.pump();
    },
    cut(cutOptions: CutOptions = {}): void {
      const connections = [...open];
      open.clear();
      for (const connection of connections) connection.destroy(cutOptions.reset === true);
    },
    refuse(on = true): void {
      refusing = on;
    },
    close(): Promise<void> {
      if (closing === undefined) {
        closing = new Promise<void>((resolve) => server.close(() => resolve()));
        const connections = [...open];
        open.clear();
        for (const connection of connections) connection.destroy(false);
      }
      return closing;
    },
  };
}
