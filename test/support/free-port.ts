/** A TCP port nobody listens on right now (for servers a test or a tool starts of its own). */
import { createServer } from 'node:net';

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** `count` distinct TCP ports nobody listens on right now (held open together while picked). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  await Promise.all(
    servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP port was assigned');
    return address.port;
  });
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}
