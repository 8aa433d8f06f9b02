/**
 * A nats-server of the test's own (JetStream on, a store directory of its own, a free port), for
 * tests that stop and restart the broker: the shared NATS on 4222 is never touched. Started inside
 * a test, it is killed (with every connection made through it closed and its store directory
 * removed) when that test finishes.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, connect, type NatsConnection } from '@nats-io/transport-node';
import { describe, onTestFinished } from 'vitest';
import { freePort } from './free-port.js';
import { reportUnavailable, type ServiceInfo } from './service-env.js';

/** The nats-server binary: `NATS_SERVER_BIN`, default `nats-server` on the PATH. */
const binary = process.env.NATS_SERVER_BIN || 'nats-server';

const info: ServiceInfo = {
  name: 'nats-server',
  url: binary,
  envVar: 'NATS_SERVER_BIN',
  start: ['apt-get install nats-server', 'go install github.com/nats-io/nats-server/v2@latest'],
};

/** A running private nats-server, from {@link NatsServerService.start}. */
export interface PrivateNats {
  /** `nats://127.0.0.1:<port>`; the same across restarts. */
  readonly url: string;
  /** Whether the server process runs now. */
  readonly running: boolean;
  /**
   * Stops the server and waits for it to exit. `SIGTERM` (the default) is a clean shutdown:
   * JetStream flushes what it acknowledged; `SIGKILL` is a crash.
   */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again, on the same port and store directory (streams persist); resolves once it answers. */
  restart(): Promise<void>;
  /** A new connection, closed when the test finishes (before the server is killed). */
  connect(options?: ConnectionOptions): Promise<NatsConnection>;
}

/** Private nats-servers for one test file, from {@link useNatsServer}. */
export interface NatsServerService {
  /** Whether the nats-server binary runs; when false every suite of `describe` is skipped. */
  readonly available: boolean;
  /** Starts a server for the current test (call it inside a test). */
  start(): Promise<PrivateNats>;
  /** `describe`, skipped when there is no nats-server binary. */
  describe(name: string, factory: () => void | Promise<void>): void;
}

/** Waits until the server at `url` accepts a connection with JetStream enabled; fails after 10 s. */
async function answers(url: string, child: () => ChildProcess): Promise<void> {
  const started = Date.now();
  for (;;) {
    const server = child();
    if (server.exitCode !== null || server.signalCode !== null)
      throw new Error(`nats-server exited with ${server.exitCode ?? server.signalCode}`);
    try {
      const nc = await connect({ servers: url, reconnect: false, timeout: 500 });
      try {
        await jetstreamManager(nc, { timeout: 500 });
        return;
      } finally {
        await nc.close();
      }
    } catch {
      // not up yet
    }
    if (Date.now() - started > 10_000) throw new Error(`nats-server at ${url} did not answer in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startServer(): Promise<PrivateNats> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'bulwark-nats-'));
  const url = `nats://127.0.0.1:${port}`;
  const connections = new Set<NatsConnection>();
  const spawnServer = () => {
    const server = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], {
      stdio: 'ignore',
    });
    server.on('error', () => {}); // a spawn failure: exitCode is set, and answers() reports it
    return server;
  };
  let child = spawnServer();
  const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (exited(child)) return;
    const exit = once(child, 'exit');
    child.kill(signal);
    await exit;
  };
  onTestFinished(async () => {
    await Promise.all([...connections].map((nc) => nc.close().catch(() => {})));
    await stop('SIGKILL');
    rmSync(storeDir, { recursive: true, force: true });
  });
  await answers(url, () => child);
  return {
    url,
    get running() {
      return !exited(child);
    },
    stop,
    async restart() {
      await stop();
      child = spawnServer();
      await answers(url, () => child);
    },
    async connect(options = {}) {
      const nc = await connect({ servers: url, ...options });
      connections.add(nc);
      return nc;
    },
  };
}

/**
 * Declares that the calling test file starts nats-servers of its own. Call it once, at the top
 * level of the file, and wrap the suites in `natsServer.describe(...)`. Without the binary it prints
 * a loud notice and the suites are skipped (or, with `CI=true` or `REQUIRE_SERVICES=1`, it throws).
 */
export function useNatsServer(): NatsServerService {
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  const available = probe.status === 0;
  if (!available) reportUnavailable(info, probe.error?.message ?? `exit ${probe.status}: ${probe.stderr}`);
  return {
    available,
    start: startServer,
    describe(name, factory) {
      describe.skipIf(!available)(name, factory);
    },
  };
}
