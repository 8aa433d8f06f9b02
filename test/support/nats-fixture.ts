/**
 * The NATS fixture: {@link useNats}, a stream/subject prefix per test, connections closed and the
 * prefix's streams deleted after the test.
 */
import { jetstreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { type ConnectionOptions, connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeEach, describe } from 'vitest';
import {
  outsideTestError,
  type ProbeResult,
  probeTimeoutMs,
  reportUnavailable,
  requireServices,
  type ServiceInfo,
  unavailableError,
  uniqueToken,
} from './service-env.js';

/** NATS (with JetStream) used by integration tests: `NATS_URL`, default `nats://127.0.0.1:4222`. */
export const natsUrl: string = process.env.NATS_URL || 'nats://127.0.0.1:4222';

/** How {@link reportUnavailable} describes NATS. */
export const natsInfo: ServiceInfo = {
  name: 'NATS',
  url: natsUrl,
  envVar: 'NATS_URL',
  start: [
    'docker run --rm -d -p 4222:4222 nats:2 -js',
    'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log',
  ],
};

/**
 * Whether NATS accepts a connection at `url` with JetStream enabled, within `timeoutMs`. Never
 * throws; the probe's connection is always closed.
 */
export async function probeNats(
  url: string = natsUrl,
  timeoutMs: number = probeTimeoutMs,
): Promise<ProbeResult> {
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: url, timeout: timeoutMs, reconnect: false });
    await jetstreamManager(nc, { timeout: timeoutMs });
    return { reachable: true };
  } catch (error) {
    return { reachable: false, reason: error instanceof Error ? error.message : String(error) };
  } finally {
    await nc?.close();
  }
}

/**
 * NATS for one test file, from {@link useNats}. Every member except `available`, `url` and
 * `describe` throws when NATS is not available.
 */
export interface NatsService {
  /** Whether NATS (with JetStream) answered the probe; when false every suite of `describe` is skipped. */
  readonly available: boolean;
  /** The NATS URL ({@link natsUrl}). */
  readonly url: string;
  /**
   * The current test's prefix, `t_<random>`: a valid stream name part and subject token. Every
   * stream whose name starts with it is deleted after the test.
   *
   * @throws Error outside a test
   */
  readonly prefix: string;
  /** `prefix` and `parts` joined with `.`: `subject('orders', '>')` → `t_1a2b….orders.>`. */
  subject(...parts: Array<string | number>): string;
  /** `prefix` and `parts` joined with `_`, a stream name deleted after the test. */
  streamName(...parts: Array<string | number>): string;
  /**
   * Creates the stream `streamName(name)`, capturing `subject(name, '>')` unless `config` says
   * otherwise, and returns its info.
   */
  addStream(name: string, config?: Partial<StreamConfig>): Promise<StreamInfo>;
  /** A new connection; made inside a test it is closed after that test, elsewhere after the file. */
  connect(options?: ConnectionOptions): Promise<NatsConnection>;
  /** `describe`, skipped when NATS is not available. */
  describe(name: string, factory: () => void | Promise<void>): void;
}

class NatsFixture implements NatsService {
  readonly url = natsUrl;
  readonly #fileConnections = new Set<NatsConnection>();
  #testConnections: Set<NatsConnection> | undefined;
  #prefix: string | undefined;
  #admin: NatsConnection | undefined;

  constructor(readonly available: boolean) {
    if (available) this.#registerHooks();
  }

  #registerHooks(): void {
    beforeEach(() => {
      if (this.#prefix !== undefined) {
        throw new Error(
          'useNats(): tests of this file run concurrently; its helpers need one test at a time',
        );
      }
      this.#prefix = `t_${uniqueToken()}`;
      this.#testConnections = new Set();
    });
    afterEach(async () => {
      const prefix = this.#prefix;
      const connections = this.#testConnections;
      this.#prefix = undefined;
      this.#testConnections = undefined;
      await Promise.all([...(connections ?? [])].map((nc) => nc.close()));
      if (prefix !== undefined) await this.#deleteStreams(prefix);
    });
    afterAll(async () => {
      await Promise.all([...this.#fileConnections].map((nc) => nc.close()));
      this.#fileConnections.clear();
      await this.#admin?.close();
      this.#admin = undefined;
    });
  }

  async #deleteStreams(prefix: string): Promise<void> {
    const jsm = await jetstreamManager(await this.#adminConnection());
    const names: string[] = [];
    for await (const name of jsm.streams.names()) if (name.startsWith(prefix)) names.push(name);
    await Promise.all(names.map((name) => jsm.streams.delete(name)));
  }

  async #adminConnection(): Promise<NatsConnection> {
    this.#admin ??= await connect({ servers: this.url });
    return this.#admin;
  }

  get prefix(): string {
    if (!this.available) throw unavailableError('NATS');
    if (this.#prefix === undefined) throw outsideTestError('nats.prefix');
    return this.#prefix;
  }

  subject(...parts: Array<string | number>): string {
    return [this.prefix, ...parts].join('.');
  }

  streamName(...parts: Array<string | number>): string {
    return [this.prefix, ...parts].join('_');
  }

  async addStream(name: string, config: Partial<StreamConfig> = {}): Promise<StreamInfo> {
    const jsm = await jetstreamManager(await this.#adminConnection());
    return jsm.streams.add({ subjects: [this.subject(name, '>')], ...config, name: this.streamName(name) });
  }

  async connect(options: ConnectionOptions = {}): Promise<NatsConnection> {
    if (!this.available) throw unavailableError('NATS');
    const nc = await connect({ servers: this.url, ...options });
    (this.#testConnections ?? this.#fileConnections).add(nc);
    return nc;
  }

  describe(name: string, factory: () => void | Promise<void>): void {
    describe.skipIf(!this.available)(name, factory);
  }
}

/**
 * Declares that the calling test file needs NATS with JetStream. Call it once, at the top level
 * of the file, and wrap the suites in `nats.describe(...)`.
 *
 * Probes {@link natsUrl} (≤ {@link probeTimeoutMs}). Reachable: registers per-test isolation (a
 * fresh {@link NatsService.prefix}; after each test its connections are closed and every stream
 * named with the prefix deleted). Unreachable: prints a loud notice on stderr and returns a
 * service whose `describe` skips.
 *
 * @throws Error when NATS is unreachable and {@link requireServices} is set
 * @example
 * ```ts
 * const nats = await useNats();
 * nats.describe('publisher', () => {
 *   it('publishes', async () => {
 *     await nats.addStream('events');
 *     const js = jetstream(await nats.connect());
 *     await js.publish(nats.subject('events', 'created'), 'x');
 *   });
 * });
 * ```
 */
export async function useNats(): Promise<NatsService> {
  const probe = await probeNats();
  if (!probe.reachable) reportUnavailable(natsInfo, probe.reason, requireServices);
  return new NatsFixture(probe.reachable);
}
